// libFuzzer target for the text parser: any input parses or fails with a user error; a program
// that also verifies prints to text that re-parses, re-verifies and prints identically.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace {

[[noreturn]] void Die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "parse_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Parses and verifies `text`; returns false on a user error, aborts on an internal one.
bool ParseAndVerify(std::string_view text, ptox::ir::Module& m) {
  try {
    m = ptox::ir::Parse(text, "fuzz.pto");
  } catch (const ptox::Error& e) {
    if (e.code() == ptox::StatusCode::kInternal) Die("internal error while parsing", e.what());
    return false;
  }
  // The printer must cope with any parsed module, verified or not.
  (void)ptox::ir::Print(m);
  try {
    ptox::ir::Verify(m);
  } catch (const ptox::Error& e) {
    if (e.code() == ptox::StatusCode::kInternal) Die("internal error while verifying", e.what());
    return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ptox::ir::Module m;
  if (!ParseAndVerify(text, m)) return 0;
  std::string printed = ptox::ir::Print(m);
  ptox::ir::Module again;
  try {
    again = ptox::ir::Parse(printed, "printed.pto");
    ptox::ir::Verify(again);
  } catch (const ptox::Error& e) {
    Die("the printed form of a valid program does not parse and verify", printed + "\n" + e.what());
  }
  std::string reprinted = ptox::ir::Print(again);
  if (reprinted != printed) {
    Die("printing is not a fixed point", "first:\n" + printed + "\nsecond:\n" + reprinted);
  }
  return 0;
}
