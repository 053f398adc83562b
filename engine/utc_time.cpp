#include "engine/utc_time.hpp"

#include <ctime>

namespace revgraph {

std::string utc_timestamp() {
    const std::time_t t = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&t, &utc);  // gmtime's static buffer is not thread-safe; a library may be called from threads
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buf;
}

}  // namespace revgraph
