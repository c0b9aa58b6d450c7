#include "cli/front.hpp"

int main(int argc, char** argv) { return gpubind::cli::run_front(argc, argv); }
