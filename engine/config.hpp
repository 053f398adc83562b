#pragma once
// TaskConfig: the hyper-parameters of docs/spec.md §1 under their published names, with rev88 as the
// defaults, and validation that explains a bad value in one line.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace revgraph {

struct TaskConfig {
    int depth = 2;
    // Coordinates of the lift (docs/spec.md §2): 81 pixels and width - 81 appended zeros, split in
    // two halves of width / 2. 82 is rev88's; every backend runs every even width 82..1024.
    int width = 82;
    double alpha = 0.5;
    std::uint64_t seed = 11;
    int epochs = 2;
    double learning_rate = 0.1;
    int batch_size = 128;
    double momentum = 0.9;
    double weight_decay = 0.0;

    // Throws revgraph::Error naming the first key whose value is out of range.
    void validate() const;
    // Why `key`'s current value is out of range ("config: depth must be in 1..1024, got 0"),
    // or "" when it is fine; lets a caller say where a bad value came from.
    std::string problem(const std::string& key) const;

    // The nine keys of docs/spec.md §1, in that order.
    static const std::vector<std::string>& keys();
    // Whether `key` takes an integer (depth, width, seed, epochs, batch_size): "2.0" is 2, and a
    // sweep may give it a range A..B. Throws for an unknown key.
    static bool integer_key(const std::string& key);

    // Set one key from its text form ("depth", "3"); unknown keys and unparsable values throw.
    void set(const std::string& key, const std::string& value);

    // JSON object with exactly the nine keys of docs/spec.md §1, in that order.
    nlohmann::ordered_json to_json() const;
    // Reads a JSON object; every key must be known, every value of the right type. Keys not
    // present keep their current value.
    void update_from_json(const nlohmann::json& object);
    // A config file's whole text: one JSON object, nothing before or after it, no NUL byte
    // anywhere (the JSON parser would take a NUL for the end of the text and ignore what
    // follows). Applies it with update_from_json and returns the keys it set, in file order.
    // Errors are "config: ..." without the file's name, which the caller adds.
    std::vector<std::string> update_from_json_text(std::string_view text);
};

}  // namespace revgraph
