#include "host/staging.hpp"

#include "common/error.hpp"

namespace gpuos::detail {

void StagingRing::reclaim(std::uint64_t retired) {
  while (!live_.empty() && live_.front().ticket < retired) live_.pop_front();
}

std::optional<std::uint64_t> StagingRing::take(std::uint64_t bytes) {
  if (pending_) fail(GPUOS_ERR_INTERNAL, "staging ring: a take is already pending");
  if (bytes == 0 || bytes > size_) fail(GPUOS_ERR_INTERNAL, "staging ring: a take of " + std::to_string(bytes) + " bytes");
  // The newest room's end and the oldest room's begin (with a pending take counted as the newest).
  const Room* newest = live_.empty() ? nullptr : &live_.back();
  const Room* oldest = live_.empty() ? nullptr : &live_.front();
  std::uint64_t at = 0;
  if (!newest) {
    at = 0;  // empty: start over at the beginning
  } else if (newest->end > oldest->begin || (newest->end == oldest->begin && newest->begin >= oldest->begin)) {
    // Not wrapped: [oldest.begin, newest.end) is in use. Room after it, or before it from 0.
    if (newest->end + bytes <= size_)
      at = newest->end;
    else if (bytes <= oldest->begin)
      at = 0;
    else
      return std::nullopt;
  } else {
    // Wrapped: in use are [oldest.begin, size) and [0, newest.end).
    if (newest->end + bytes <= oldest->begin)
      at = newest->end;
    else
      return std::nullopt;
  }
  pending_ = Room{at, at + bytes, 0};
  return at;
}

void StagingRing::commit(std::uint64_t ticket) {
  if (!pending_) fail(GPUOS_ERR_INTERNAL, "staging ring: no take to commit");
  pending_->ticket = ticket;
  live_.push_back(*pending_);
  pending_.reset();
}

void StagingRing::abort() { pending_.reset(); }

std::uint64_t StagingRing::used() const {
  std::uint64_t n = pending_ ? pending_->end - pending_->begin : 0;
  for (const Room& r : live_) n += r.end - r.begin;
  return n;
}

}  // namespace gpuos::detail
