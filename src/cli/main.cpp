#include "cli/commands.hpp"

int main(int argc, char** argv) { return gpubind::cli::run_main(argc, argv); }
