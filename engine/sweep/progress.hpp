#pragma once
// How a sweep reports its progress on stderr: a bar redrawn in place on a terminal, plain
// lines at intervals otherwise (a log file or a Slurm job's output).
#include <string>

#include "engine/sweep/runner.hpp"

namespace revgraph::sweep {

// "[##########..........]  12/48 points  3.1/s  ETA 12s": no line break, for "\r" redrawing.
std::string progress_bar(const Progress& p, int width = 30);
// "sweep: 12/48 points, 3.1 points/s, ETA 12s"
std::string progress_line(const Progress& p);
// Seconds as a person reads them: "42s", "3m05s", "2h07m".
std::string human_duration(double seconds);

}  // namespace revgraph::sweep
