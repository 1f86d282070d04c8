// Files that are either whole or absent: a crash mid-write never leaves half
// of one behind. Shared by metrics, reports, traces and the simulator.
#pragma once

#include <string>

namespace hetrain {

// Throws DataError now, not after hours of training, if `path` cannot be
// written (creates and removes a temporary file beside it).
void check_writable(const std::string& path);

// Writes `text` to `path` atomically: a temporary file beside it, fsync,
// rename. A crash leaves the old file or none, never half of one. Throws
// DataError naming the path.
void write_file_atomic(const std::string& path, const std::string& text);

// The temporary name used beside `path` by this process (unique per process,
// so workers sharing a directory never write each other's temporaries).
std::string temporary_path_for(const std::string& path);

}  // namespace hetrain
