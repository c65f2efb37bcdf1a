// The staging ring for graph launches' updates: mapped pinned memory, allocated at boot (a page-locked
// allocation once the kernel runs could wait for it), from which each launch takes the room for its
// GraphDelta list; the room comes back once the launch's ticket has retired. Launches take room in
// ticket order, so it is a ring: room is taken at the end and comes back from the front. Pure logic over
// offsets: unit-tested on the CPU (tests/unit/test_staging.cpp).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

namespace gpuos::detail {

class StagingRing {
 public:
  explicit StagingRing(std::uint64_t bytes) : size_(bytes) {}

  std::uint64_t size() const { return size_; }
  /// Gives back the room of every launch whose ticket is below `retired`.
  void reclaim(std::uint64_t retired);
  /// Room for `bytes` (> 0, at most size()) after the room taken so far: its offset, or nullopt until
  /// older launches retire. At most one take is pending (not committed or aborted) at a time.
  std::optional<std::uint64_t> take(std::uint64_t bytes);
  /// The pending take belongs to the launch with this ticket (later than any committed before).
  void commit(std::uint64_t ticket);
  /// The pending take is free again (its launch was not submitted).
  void abort();
  /// Bytes held by launches (and a pending take).
  std::uint64_t used() const;
  /// The ticket of the oldest launch holding room, if any.
  std::optional<std::uint64_t> oldest() const {
    return live_.empty() ? std::nullopt : std::optional<std::uint64_t>(live_.front().ticket);
  }

 private:
  struct Room {
    std::uint64_t begin, end, ticket;
  };
  std::uint64_t size_;
  std::deque<Room> live_;            // in ticket order
  std::optional<Room> pending_;
};

}  // namespace gpuos::detail
