// Linked against one layer library as a whole archive and only the layers that layer declares
// (tests/CMakeLists.txt): a call into any other layer is an undefined symbol, and the build fails.
int main() { return 0; }
