// ptox CLI entry point (subcommands are in cmd_<name>.cc).
#include <cstdio>
int main() { std::puts("ptox"); return 0; }
