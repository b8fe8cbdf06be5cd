#include "ptp.h"

#include <cassert>

ptp::ptp(CACHE* cache) : ptp(cache, cache->NUM_SET, cache->NUM_WAY) {}

ptp::ptp(CACHE* cache, long sets, long ways)
    : replacement(cache), NUM_WAY(ways), last_used_cycles(static_cast<std::size_t>(sets * ways), 0), page_table(static_cast<std::size_t>(sets * ways), false)
{
}

long ptp::find_victim(uint32_t triggering_cpu, uint64_t instr_id, long set, const champsim::cache_block* current_set, champsim::address ip,
                      champsim::address full_addr, access_type type)
{
  auto base = static_cast<std::size_t>(set * NUM_WAY);
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  bool prioritize = (rng & 0xffffffffULL) < threshold;
  long victim = -1;
  if (prioritize) {
    // The least recently used line no walk filled.
    for (long w = 0; w < NUM_WAY; ++w) {
      if (!page_table[base + w] && (victim < 0 || last_used_cycles[base + w] < last_used_cycles[base + victim]))
        victim = w;
    }
  }
  if (victim < 0) {
    victim = 0;
    for (long w = 1; w < NUM_WAY; ++w) {
      if (last_used_cycles[base + w] < last_used_cycles[base + victim])
        victim = w;
    }
  }
  assert(0 <= victim && victim < NUM_WAY);
  return victim;
}

void ptp::replacement_cache_fill(uint32_t triggering_cpu, long set, long way, champsim::address full_addr, champsim::address ip, champsim::address victim_addr,
                                 access_type type)
{
  auto i = static_cast<std::size_t>(set * NUM_WAY + way);
  last_used_cycles.at(i) = cycle++;
  page_table.at(i) = access_type{type} == access_type::TRANSLATION;
}

void ptp::update_replacement_state(uint32_t triggering_cpu, long set, long way, champsim::address full_addr, champsim::address ip,
                                   champsim::address victim_addr, access_type type, uint8_t hit)
{
  // As LRU: a hit other than a writeback makes the line the most recently used.
  if (hit && access_type{type} != access_type::WRITE)
    last_used_cycles.at(static_cast<std::size_t>(set * NUM_WAY + way)) = cycle++;
}
