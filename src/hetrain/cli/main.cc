#include "hetrain/cli/args.h"

int main(int argc, char** argv) { return hetrain::cli::main_entry(argc, argv); }
