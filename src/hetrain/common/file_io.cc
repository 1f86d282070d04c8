#include "hetrain/common/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hetrain/common/error.h"

namespace hetrain {

std::string temporary_path_for(const std::string& path) { return fmt::format("{}.tmp.{}", path, ::getpid()); }

void check_writable(const std::string& path) {
  const std::string tmp = temporary_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw DataError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  ::close(fd);
  std::remove(tmp.c_str());
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = temporary_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw DataError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  std::size_t done = 0;
  bool ok = true;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    done += static_cast<std::size_t>(w);
  }
  const int saved = errno;
  ok = ok && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = ok ? errno : saved;
    std::remove(tmp.c_str());
    throw DataError(fmt::format("cannot write {}: {}", path, std::strerror(err)));
  }
}

}  // namespace hetrain
