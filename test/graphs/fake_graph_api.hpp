#pragma once
// A graph API (graphs/basic_capture.hpp) that runs on the CPU and records everything: which streams
// are capturing, the graphs and executable graphs alive, what each captured, what ran on the
// "device" and in which order, how often each graph was launched and uploaded. Work is enqueued by
// launchers calling FakeGraphApi::enqueue(stream, name): recorded into the open capture of that
// stream, or run at once when there is none. Failures are injected per call name.
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/error.hpp"

namespace revgraph::graphs::test {

struct FakeWorld {
    std::map<int, std::vector<std::string>> capturing;  // open captures: what they recorded
    std::set<int> invalidated;                          // captures a forbidden call broke
    std::map<int, std::vector<std::string>> graphs;     // alive
    std::map<int, std::vector<std::string>> execs;      // alive
    std::vector<std::string> ran;                       // executed work, in order
    std::map<int, int> launches, uploads;
    std::set<std::string> fail;  // calls that return an error: "begin", "end", "nodes", "instantiate", "launch"
    int next_id = 1;
    int cleared_errors = 0;
};

struct FakeGraphApi {
    using Stream = int;  // 0 is the default stream
    using Graph = int;   // 0: none
    using Exec = int;    // 0: none
    using Status = int;  // 0: success

    static inline FakeWorld w;

    // What a launcher does: record `what` into the stream's capture, or run it now.
    static void enqueue(Stream s, const std::string& what) {
        const auto open = w.capturing.find(s);
        if (open != w.capturing.end())
            open->second.push_back(what);
        else
            w.ran.push_back(what);
    }
    // A call that is not allowed while capturing (a sync, an allocation): it invalidates the
    // capture and fails, as the CUDA runtime does.
    static void forbidden(Stream s) {
        if (w.capturing.count(s)) {
            w.invalidated.insert(s);
            throw Error("fake: operation not permitted when stream is capturing");
        }
    }

    static bool ok(Status s) { return s == 0; }
    static Status begin_capture(Stream s) {
        if (w.fail.count("begin") || w.capturing.count(s)) return 1;
        w.capturing[s];
        return 0;
    }
    static Status end_capture(Stream s, Graph* g) {
        const auto open = w.capturing.find(s);
        if (open == w.capturing.end()) return 2;
        std::vector<std::string> nodes = std::move(open->second);
        w.capturing.erase(open);       // ended in every case
        if (w.invalidated.erase(s)) {  // as CUDA: an invalidated capture hands back no graph
            *g = 0;
            return 3;
        }
        *g = w.next_id++;
        w.graphs[*g] = std::move(nodes);
        return w.fail.count("end") ? 9 : 0;  // an injected failure that still hands back a graph
    }
    static Status count_nodes(Graph g, std::size_t* n) {
        if (w.fail.count("nodes") || !w.graphs.count(g)) return 4;
        *n = w.graphs.at(g).size();
        return 0;
    }
    static Status instantiate(Exec* e, Graph g) {
        if (w.fail.count("instantiate") || !w.graphs.count(g)) return 5;
        *e = w.next_id++;
        w.execs[*e] = w.graphs.at(g);
        return 0;
    }
    static void destroy_graph(Graph g) noexcept { w.graphs.erase(g); }
    static void destroy_exec(Exec e) noexcept { w.execs.erase(e); }
    static Status launch(Exec e, Stream s) {
        if (w.fail.count("launch") || !w.execs.count(e) || w.capturing.count(s)) return 6;
        ++w.launches[e];
        for (const auto& what : w.execs.at(e)) w.ran.push_back(what);
        return 0;
    }
    static Status upload(Exec e, Stream) {
        if (!w.execs.count(e)) return 7;
        ++w.uploads[e];
        return 0;
    }
    static Status synchronize(Stream s) {
        if (w.capturing.count(s)) {
            w.invalidated.insert(s);
            return 8;
        }
        return 0;
    }
    static void clear_error() noexcept { ++w.cleared_errors; }
    [[noreturn]] static void fail(Status s, const char* call) {
        throw Error(std::string("fake: ") + call + " failed with " + std::to_string(s));
    }
};

}  // namespace revgraph::graphs::test
