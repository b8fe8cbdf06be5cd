//! Searches over the lanes of one set: for a key (8-byte cache and PWC keys, 16-byte TLB
//! keys), which every lookup runs, and for the smallest state word (the LRU/FIFO victim),
//! which every fill runs. On x86-64 they use SSE2 (part of the base instruction set, so no
//! feature detection); elsewhere, plain loops. Both give the same answers (tested against
//! each other below).

/// The first lane of `keys` equal to `key` (vectorized when `keys.len()` is even).
#[inline(always)]
pub fn find_u64(keys: &[u64], key: u64) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if keys.len() % 2 == 0 {
        // SAFETY: SSE2 is part of x86-64; the loads stay inside `keys` (unaligned loads).
        return unsafe { find_sse2(keys, key) };
    }
    keys.iter().position(|&k| k == key)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn find_sse2(keys: &[u64], key: u64) -> Option<usize> {
    use std::arch::x86_64::*;
    let k = _mm_set1_epi64x(key as i64);
    let p = keys.as_ptr() as *const __m128i;
    // One bit per 32-bit half: a key lane is equal when both of its bits are set. The
    // common strides are fully unrolled.
    let halves: u64 = match keys.len() {
        4 => halves_of::<2>(p, k),
        8 => halves_of::<4>(p, k),
        12 => halves_of::<4>(p, k) | halves_of::<2>(p.add(4), k) << 16,
        16 => halves_of::<8>(p, k),
        24 => halves_of::<8>(p, k) | halves_of::<4>(p.add(8), k) << 32,
        32 => halves_of::<8>(p, k) | halves_of::<8>(p.add(8), k) << 32,
        n if n % 16 == 0 => {
            for g in (0..n).step_by(16) {
                let h = halves_of::<8>(p.add(g / 2), k);
                let lanes = h & (h >> 1) & 0x5555_5555;
                if lanes != 0 {
                    return Some(g + lanes.trailing_zeros() as usize / 2);
                }
            }
            return None;
        }
        _ => return keys.iter().position(|&x| x == key),
    };
    let lanes = halves & (halves >> 1) & 0x5555_5555_5555_5555;
    (lanes != 0).then(|| lanes.trailing_zeros() as usize / 2)
}

/// 32-bit equality of `V` vectors (2 * `V` keys) at `p` with `k`, a bit per 32-bit half.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn halves_of<const V: usize>(p: *const std::arch::x86_64::__m128i, k: std::arch::x86_64::__m128i) -> u64 {
    use std::arch::x86_64::*;
    let eq = |i: usize| _mm_cmpeq_epi32(_mm_loadu_si128(p.add(i)), k);
    match V {
        2 => _mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(eq(0), eq(1)), _mm_setzero_si128())) as u64,
        4 => _mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(eq(0), eq(1)), _mm_packs_epi32(eq(2), eq(3)))) as u64,
        _ => {
            debug_assert_eq!(V, 8);
            let lo = _mm_packs_epi16(_mm_packs_epi32(eq(0), eq(1)), _mm_packs_epi32(eq(2), eq(3)));
            let hi = _mm_packs_epi16(_mm_packs_epi32(eq(4), eq(5)), _mm_packs_epi32(eq(6), eq(7)));
            _mm_movemask_epi8(lo) as u32 as u64 | (_mm_movemask_epi8(hi) as u32 as u64) << 16
        }
    }
}

/// The first lane `i` with `words[2i..2i+2] == key`: a search over 16-byte keys (vectorized
/// when their number is a multiple of 4).
#[inline]
pub fn find_u64_pair(words: &[u64], key: [u64; 2]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if words.len() % 8 == 0 {
        // SAFETY: SSE2 is part of x86-64; the loads stay inside `words` (unaligned loads).
        return unsafe { find_pair_sse2(words, key) };
    }
    words.chunks_exact(2).position(|w| w == key)
}

#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn find_pair_sse2(words: &[u64], key: [u64; 2]) -> Option<usize> {
    use std::arch::x86_64::*;
    let k = _mm_set_epi64x(key[1] as i64, key[0] as i64);
    let p = words.as_ptr() as *const __m128i;
    let eq = |i: usize| _mm_cmpeq_epi32(_mm_loadu_si128(p.add(i)), k);
    // Four keys at a time, narrowed to a nibble each: a key is equal when its nibble is full.
    let mut g = 0;
    while g < words.len() / 2 {
        let n = _mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(eq(g), eq(g + 1)), _mm_packs_epi32(eq(g + 2), eq(g + 3)))) as u32;
        let full = n & (n >> 1) & (n >> 2) & (n >> 3) & 0x1111;
        if full != 0 {
            return Some(g + full.trailing_zeros() as usize / 4);
        }
        g += 4;
    }
    None
}

/// The first lane holding the smallest value (0 if `ages` is empty; vectorized when its
/// length is a multiple of 4).
#[inline]
pub fn argmin_u32(ages: &[u32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if !ages.is_empty() && ages.len() % 4 == 0 {
        // SAFETY: SSE2 is part of x86-64; the loads stay inside `ages` (unaligned loads).
        return unsafe { argmin_sse2(ages) };
    }
    let min = ages.iter().copied().min().unwrap_or(0);
    ages.iter().position(|&a| a == min).unwrap_or(0)
}

#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn argmin_sse2(ages: &[u32]) -> usize {
    match ages.len() {
        4 => argmin_quads::<1>(ages),
        8 => argmin_quads::<2>(ages),
        16 => argmin_quads::<4>(ages),
        32 => argmin_quads::<8>(ages),
        n => argmin_any(ages, n / 4),
    }
}

/// The SSE2 victim search, `Q` * 4 lanes: the minimum of every lane, then its first lane.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn argmin_any(ages: &[u32], quads: usize) -> usize {
    use std::arch::x86_64::*;
    let flip = _mm_set1_epi32(i32::MIN);
    let p = ages.as_ptr() as *const __m128i;
    let mut m = _mm_xor_si128(_mm_loadu_si128(p), flip);
    for i in 1..quads {
        m = min_i32(m, _mm_xor_si128(_mm_loadu_si128(p.add(i)), flip));
    }
    let m = _mm_xor_si128(spread_min(m), flip);
    for i in 0..quads {
        let eq = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_loadu_si128(p.add(i)), m)));
        if eq != 0 {
            return 4 * i + eq.trailing_zeros() as usize;
        }
    }
    unreachable!("the minimum is one of the lanes")
}

/// Lane-wise signed minimum (SSE2 has no `pminsd`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn min_i32(a: std::arch::x86_64::__m128i, b: std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::*;
    let gt = _mm_cmpgt_epi32(a, b);
    _mm_or_si128(_mm_and_si128(gt, b), _mm_andnot_si128(gt, a))
}

/// Every lane becomes the minimum of the four.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn spread_min(m: std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::*;
    let m = min_i32(m, _mm_shuffle_epi32::<0b01_00_11_10>(m));
    min_i32(m, _mm_shuffle_epi32::<0b10_11_00_01>(m))
}

/// [`argmin_u32`] of exactly `Q` * 4 lanes, unrolled.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn argmin_quads<const Q: usize>(ages: &[u32]) -> usize {
    use std::arch::x86_64::*;
    debug_assert_eq!(ages.len(), 4 * Q);
    // SSE2 compares signed 32-bit lanes: flipping the top bit orders unsigned values.
    let flip = _mm_set1_epi32(i32::MIN);
    let p = ages.as_ptr() as *const __m128i;
    let v: [__m128i; Q] = std::array::from_fn(|i| _mm_loadu_si128(p.add(i)));
    let mut m = _mm_xor_si128(v[0], flip);
    for x in &v[1..] {
        m = min_i32(m, _mm_xor_si128(*x, flip));
    }
    let m = _mm_xor_si128(spread_min(m), flip);
    let mut bits = 0u32;
    for (i, x) in v.iter().enumerate() {
        bits |= (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(*x, m))) as u32) << (4 * i);
    }
    bits.trailing_zeros() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_match_plain_loops() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for len in [1usize, 3, 4, 6, 8, 12, 16, 20, 24, 32, 64, 4096] {
            for _ in 0..200 {
                // Few distinct values, so duplicates and ties are common.
                let keys: Vec<u64> = (0..len).map(|_| if next() % 3 == 0 { u64::MAX - next() % 3 } else { next() % 7 }).collect();
                let key = next() % 9;
                assert_eq!(find_u64(&keys, key), keys.iter().position(|&k| k == key), "{keys:?} {key}");
                let pair = [key, next() % 3];
                let words: Vec<u64> = (0..2 * len).map(|i| if i % 2 == 0 { keys[i / 2] } else { next() % 3 }).collect();
                assert_eq!(find_u64_pair(&words, pair), words.chunks_exact(2).position(|w| w == pair), "{words:?} {pair:?}");
                let ages: Vec<u32> = (0..len).map(|_| [0, 1, 5, u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) - 1][(next() % 7) as usize]).collect();
                let min = *ages.iter().min().unwrap();
                assert_eq!(argmin_u32(&ages), ages.iter().position(|&a| a == min).unwrap(), "{ages:?}");
            }
        }
    }
}
