# Writes the source half of the build manifest (include/ptox/manifest.h) at every build:
#   cmake -DSOURCE_DIR=<checkout> -DOUT=<file.inc> -P build_info.cmake
# The commit, whether the tree differed from it, and the git tree id of the tree as built
# (tracked and untracked, not ignored, files): two builds of the same source name the same tree,
# which is how `ptox doctor` tells a stale Python module from a current one. OUT is rewritten only
# when that identity changes, so a no-op build recompiles nothing; the time recorded is when a
# build of this source state first ran.
set(commit "unknown")
set(dirty 0)
set(tree "unknown")
find_program(GIT git)

function(git out)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE text ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc EQUAL 0)
    set(${out} "${text}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

if(GIT)
  git(head "${GIT}" rev-parse --verify -q HEAD)
  git(top "${GIT}" rev-parse --show-toplevel)
  get_filename_component(source_real "${SOURCE_DIR}" REALPATH)
  if(head AND top)
    get_filename_component(top_real "${top}" REALPATH)
  endif()
  # Only a checkout of ptox itself: a source folder unpacked inside some other repository
  # (an sdist in a user's project) has no commit of its own.
  if(head AND top AND top_real STREQUAL source_real)
    set(commit "${head}")
    git(status "${GIT}" status --porcelain --untracked-files=normal)
    if(status STREQUAL "")
      git(tree "${GIT}" rev-parse "HEAD^{tree}")
    else()
      set(dirty 1)
      # The working tree as a tree object, through a private copy of the index (its stat cache
      # keeps this fast); the checkout's own index is not touched.
      git(index "${GIT}" rev-parse --git-path index)
      if(NOT IS_ABSOLUTE "${index}")
        set(index "${SOURCE_DIR}/${index}")
      endif()
      set(private "${OUT}.index")
      file(REMOVE "${private}")
      if(EXISTS "${index}")
        file(COPY_FILE "${index}" "${private}")
      endif()
      git(added ${CMAKE_COMMAND} -E env "GIT_INDEX_FILE=${private}" "${GIT}" add -A)
      git(tree ${CMAKE_COMMAND} -E env "GIT_INDEX_FILE=${private}" "${GIT}" write-tree)
      file(REMOVE "${private}")
    endif()
    if(tree STREQUAL "")
      set(tree "unknown")
    endif()
  endif()
endif()

set(identity "#define PTOX_BUILD_COMMIT \"${commit}\"\n#define PTOX_BUILD_DIRTY ${dirty}\n#define PTOX_BUILD_SOURCE_TREE \"${tree}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  string(REGEX REPLACE "#define PTOX_BUILD_TIME [^\n]*\n" "" old "${old}")
  if(old STREQUAL identity)
    return()
  endif()
endif()
string(TIMESTAMP now "%Y-%m-%dT%H:%M:%SZ" UTC)
file(WRITE "${OUT}" "${identity}#define PTOX_BUILD_TIME \"${now}\"\n")
