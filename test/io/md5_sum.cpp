// Prints "<md5> <sha256>" of each file named, read in pieces of 1,000 bytes so the streaming path
// is the one exercised; test/io/check_md5.py compares the lines with Python's hashlib.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <vector>

#include "engine/io/md5.hpp"
#include "engine/io/sha256.hpp"

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        std::ifstream in(argv[i], std::ios::binary);
        if (!in) {
            std::cerr << "md5_sum: cannot read " << argv[i] << "\n";
            return 1;
        }
        revgraph::io::Md5 md5;
        revgraph::io::Sha256 sha;
        std::vector<char> buf(1000);
        while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
            md5.update(buf.data(), static_cast<std::size_t>(in.gcount()));
            sha.update(buf.data(), static_cast<std::size_t>(in.gcount()));
        }
        std::cout << md5.hex_digest() << " " << sha.hex_digest() << "\n";
    }
    return 0;
}
