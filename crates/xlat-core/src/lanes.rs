//! Searches over the lanes of one set (keys, state words): the two loops every lookup and
//! every fill of a set-associative structure runs. On x86-64 they use SSE2 (part of the
//! base instruction set, so no feature detection); elsewhere, plain loops. Both give the
//! same answers (tested against each other below).

/// The first lane of `keys` equal to `key` (vectorized when `keys.len()` is even).
#[inline]
pub fn find_u64(keys: &[u64], key: u64) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if keys.len() % 2 == 0 {
        // SAFETY: SSE2 is part of x86-64; the loads stay inside `keys` (unaligned loads).
        return unsafe { find_sse2(keys, key) };
    }
    keys.iter().position(|&k| k == key)
}

#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn find_sse2(keys: &[u64], key: u64) -> Option<usize> {
    {
        use std::arch::x86_64::*;
        let k = _mm_set1_epi64x(key as i64);
        let p = keys.as_ptr() as *const __m128i;
        let pairs = keys.len() / 2;
        let mut g = 0;
        while g < pairs {
            // Up to 8 pairs (16 lanes) per group, without a branch per pair.
            let n = (pairs - g).min(8);
            let mut m = 0u32;
            for i in 0..n {
                let e = _mm_cmpeq_epi32(_mm_loadu_si128(p.add(g + i)), k);
                // Both 32-bit halves equal: the 64-bit lane is.
                let e = _mm_and_si128(e, _mm_shuffle_epi32::<0b10_11_00_01>(e));
                m |= (_mm_movemask_pd(_mm_castsi128_pd(e)) as u32) << (2 * i);
            }
            if m != 0 {
                return Some(2 * g + m.trailing_zeros() as usize);
            }
            g += n;
        }
        None
    }
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
    {
        use std::arch::x86_64::*;
        // SSE2 compares signed 32-bit lanes: flipping the top bit orders unsigned values.
        let flip = _mm_set1_epi32(i32::MIN);
        let p = ages.as_ptr() as *const __m128i;
        let quads = ages.len() / 4;
        let min = |a: __m128i, b: __m128i| {
            let gt = _mm_cmpgt_epi32(a, b);
            _mm_or_si128(_mm_and_si128(gt, b), _mm_andnot_si128(gt, a))
        };
        let mut m = _mm_xor_si128(_mm_loadu_si128(p), flip);
        for i in 1..quads {
            m = min(m, _mm_xor_si128(_mm_loadu_si128(p.add(i)), flip));
        }
        // Every lane of `m` becomes the minimum.
        m = min(m, _mm_shuffle_epi32::<0b01_00_11_10>(m));
        m = min(m, _mm_shuffle_epi32::<0b10_11_00_01>(m));
        let m = _mm_xor_si128(m, flip);
        for i in 0..quads {
            let eq = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_loadu_si128(p.add(i)), m)));
            if eq != 0 {
                return 4 * i + eq.trailing_zeros() as usize;
            }
        }
        unreachable!("the minimum is one of the lanes")
    }
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
        for len in [1usize, 3, 4, 6, 8, 12, 16, 20, 32, 64, 4096] {
            for _ in 0..200 {
                // Few distinct values, so duplicates and ties are common.
                let keys: Vec<u64> = (0..len).map(|_| if next() % 3 == 0 { u64::MAX - next() % 3 } else { next() % 7 }).collect();
                let key = next() % 9;
                assert_eq!(find_u64(&keys, key), keys.iter().position(|&k| k == key), "{keys:?} {key}");
                let ages: Vec<u32> = (0..len).map(|_| [0, 1, 5, u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) - 1][(next() % 7) as usize]).collect();
                let min = *ages.iter().min().unwrap();
                assert_eq!(argmin_u32(&ages), ages.iter().position(|&a| a == min).unwrap(), "{ages:?}");
            }
        }
    }
}
