// Page-table prioritization (PTP) as a ChampSim replacement policy, for comparing the flattening
// study's PTP gain in ChampSim and xlat (issue #63). The xlat side is `cache.l2.policy=ptp`,
// `cache.llc.policy=ptp`, `ptp.mode=always` (crates/xlat-core/src/memory/repl.rs, `Ptp`): LRU,
// except that with probability 0.99 the victim is the least recently used line that a page walk
// did not fill (the paper's 99 % biased victim choice); a set of page-table lines only falls back
// to plain LRU. Written for this repository (calibration/README.md), built into a local ChampSim.
#ifndef REPLACEMENT_PTP_H
#define REPLACEMENT_PTP_H

#include <cstdint>
#include <vector>

#include "cache.h"
#include "modules.h"

class ptp : public champsim::modules::replacement
{
  long NUM_WAY;
  std::vector<uint64_t> last_used_cycles;
  // A page walk (access_type::TRANSLATION) filled the line.
  std::vector<bool> page_table;
  uint64_t cycle = 0;
  // xorshift64, seeded as xlat seeds its own (any odd seed; the choice is not compared bit for bit).
  uint64_t rng = 1;
  // 0.99 scaled to 2^32.
  static constexpr uint64_t threshold = static_cast<uint64_t>(0.99 * 4294967296.0);

public:
  explicit ptp(CACHE* cache);
  ptp(CACHE* cache, long sets, long ways);

  long find_victim(uint32_t triggering_cpu, uint64_t instr_id, long set, const champsim::cache_block* current_set, champsim::address ip,
                   champsim::address full_addr, access_type type);
  void replacement_cache_fill(uint32_t triggering_cpu, long set, long way, champsim::address full_addr, champsim::address ip, champsim::address victim_addr,
                              access_type type);
  void update_replacement_state(uint32_t triggering_cpu, long set, long way, champsim::address full_addr, champsim::address ip, champsim::address victim_addr,
                                access_type type, uint8_t hit);
};

#endif
