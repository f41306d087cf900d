# Cross build for AArch64 Linux on an x86-64 Debian host (docs/targets.md, "Arm"): Debian's
# g++-aarch64-linux-gnu compiles, the arm64 multiarch -dev packages (scripts/setup.sh --arm) give
# the libraries, and qemu-aarch64 runs what is built: ctest and gtest discovery go through
# CMAKE_CROSSCOMPILING_EMULATOR, with the vector length from QEMU_CPU (docs/targets.md). No -L:
# the binaries load the arm64 multiarch ld.so and libraries from /lib/aarch64-linux-gnu, a matching
# set (ld.so from the cross package's /usr/aarch64-linux-gnu with that libc.so hangs in its locks).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# Libraries and packages for the target only (/usr/lib/aarch64-linux-gnu); programs (python3,
# lit) from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
