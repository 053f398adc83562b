#pragma once
// A submission folder (docs/results.md, "The submission folder (`qualify --submission`)"), written
// all or nothing: every file goes into a hidden temporary folder beside the target (.NAME.tmp-RANDOM,
// made by this writer alone, so that two writers never share one), which is renamed to the
// target only once the last file is on disk. An existing target is refused unless it is an empty
// directory; a failed or interrupted writer leaves the target as it was.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace revgraph::qualify {

// Before any work: throws Error when `out` exists and is not an empty directory, or when its
// parent directory is missing or not writable.
void check_submission_target(const std::filesystem::path& out);

class SubmissionWriter {
public:
    explicit SubmissionWriter(std::filesystem::path out);  // checks the target, creates the temporary folder
    ~SubmissionWriter();                                   // without commit(): removes the temporary folder
    SubmissionWriter(const SubmissionWriter&) = delete;
    SubmissionWriter& operator=(const SubmissionWriter&) = delete;

    // `relative` ("protocol.json", "predictions/draw-00.npy") written and fsynced in the temporary folder.
    void write(const std::string& relative, std::span<const std::uint8_t> bytes);
    void write(const std::string& relative, std::string_view text);
    // Renames the temporary folder to the target (replacing an empty directory) and fsyncs the parent.
    void commit();

    const std::filesystem::path& target() const { return out_; }

private:
    std::filesystem::path out_, temp_;
    bool committed_ = false;
};

}  // namespace revgraph::qualify
