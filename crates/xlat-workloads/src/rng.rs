//! Deterministic pseudo-random numbers. Kernels never use host entropy: the same seed must
//! produce the same reference stream on every machine.

/// SplitMix64: used to expand one user seed into independent per-thread/per-purpose seeds.
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Mix a seed with a stream/purpose tag so that e.g. thread 1 of seed 7 and thread 0 of
/// seed 8 do not share a sequence.
pub fn derive(seed: u64, tag: u64) -> u64 {
    let mut s = seed ^ tag.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    splitmix64(&mut s);
    splitmix64(&mut s)
}

/// How many swaps ahead [`Rng::shuffle`] draws.
const SHUFFLE_AHEAD: usize = 16;

/// xoshiro256++: fast, small state, good statistical quality; enough for workload inputs.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut sm = seed;
        let s = [splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm)];
        Rng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let r = self.s[0].wrapping_add(self.s[3]).rotate_left(23).wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the tiny bias is irrelevant here and the
    /// absence of a rejection loop keeps the hot loops branch-free). `n == 0` gives 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        // (A large slice's swaps go to random places of host memory, one miss each: the draws
        // do not depend on the data, so they are made up to `SHUFFLE_AHEAD` swaps early and
        // their elements prefetched. The same draws in the same order: the same permutation.)
        let mut drawn = [0usize; SHUFFLE_AHEAD];
        // The next `i` to draw a partner for, `len - 1` down to 1 (0: all drawn).
        let mut d = v.len().saturating_sub(1);
        for _ in 0..SHUFFLE_AHEAD.min(d) {
            self.draw(&mut d, &mut drawn, v);
        }
        for i in (1..v.len()).rev() {
            // (`i - SHUFFLE_AHEAD` shares `i`'s slot: taken before it is drawn.)
            let j = drawn[i % SHUFFLE_AHEAD];
            if d >= 1 {
                self.draw(&mut d, &mut drawn, v);
            }
            v.swap(i, j);
        }
    }

    /// Draw the shuffle's partner for `d` and prefetch it; `d` moves down one.
    #[inline]
    fn draw<T>(&mut self, d: &mut usize, drawn: &mut [usize; SHUFFLE_AHEAD], v: &[T]) {
        let j = self.below(*d as u64 + 1) as usize;
        drawn[*d % SHUFFLE_AHEAD] = j;
        xlat_core::prefetch(&v[j]);
        *d -= 1;
    }
}

/// HPCC RandomAccess's generator: a 64-bit LFSR over GF(2) with polynomial x^63+x^2+x+1
/// (`POLY = 7`), stepped as `ran = (ran << 1) ^ (ran < 0 ? POLY : 0)`.
pub mod hpcc {
    pub const POLY: u64 = 0x7;
    pub const PERIOD: i64 = 1_317_624_576_693_539_401;

    #[inline]
    pub fn step(ran: u64) -> u64 {
        (ran << 1) ^ (((ran as i64) >> 63) as u64 & POLY)
    }

    /// The `n`-th value of the stream (HPCC_starts): jump ahead by squaring the step
    /// operator, so 128 independent lanes can start at evenly spaced offsets.
    pub fn starts(n: i64) -> u64 {
        let mut n = n;
        while n < 0 {
            n += PERIOD;
        }
        while n > PERIOD {
            n -= PERIOD;
        }
        if n == 0 {
            return 1;
        }
        let mut m2 = [0u64; 64];
        let mut temp: u64 = 1;
        for m in m2.iter_mut() {
            *m = temp;
            temp = step(temp);
            temp = step(temp);
        }
        let mut i: i32 = 62;
        while i >= 0 {
            if (n >> i) & 1 != 0 {
                break;
            }
            i -= 1;
        }
        let mut ran: u64 = 2;
        while i > 0 {
            temp = 0;
            for (j, m) in m2.iter().enumerate() {
                if (ran >> j) & 1 != 0 {
                    temp ^= m;
                }
            }
            ran = temp;
            i -= 1;
            if (n >> i) & 1 != 0 {
                ran = step(ran);
            }
        }
        ran
    }
}

/// Zipf-distributed ranks in `0..n` (Gray et al., "Quickly generating billion-record
/// synthetic databases", the generator YCSB uses). Rank 0 is the hottest.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipf {
    pub fn new(n: u64, theta: f64) -> Zipf {
        let zeta = |k: u64| -> f64 { (1..=k).map(|i| 1.0 / (i as f64).powf(theta)).sum() };
        let zetan = zeta(n);
        let zeta2 = zeta(2.min(n));
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipf { n: n as f64, theta, alpha, zetan, eta }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = (self.n * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n as u64 - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shuffle that draws ahead and prefetches gives Fisher-Yates's permutation, draw for
    /// draw, and leaves the generator where Fisher-Yates leaves it.
    #[test]
    fn a_large_shuffle_is_fisher_yates() {
        for n in [0usize, 1, 2, 17, 1 << 16, (1 << 16) + 1, 300_007] {
            let (mut a, mut b) = (Rng::new(9), Rng::new(9));
            let mut got: Vec<u32> = (0..n as u32).collect();
            a.shuffle(&mut got);
            let mut want: Vec<u32> = (0..n as u32).collect();
            for i in (1..n).rev() {
                let j = b.below(i as u64 + 1) as usize;
                want.swap(i, j);
            }
            assert_eq!(got, want, "n={n}");
            assert_eq!(a.next_u64(), b.next_u64(), "n={n}");
        }
    }

    #[test]
    fn hpcc_starts_matches_stepping() {
        let mut r = 1u64;
        for n in 0..300i64 {
            assert_eq!(hpcc::starts(n), r, "n={n}");
            r = hpcc::step(r);
        }
    }

    #[test]
    fn rng_is_deterministic_and_below_in_range() {
        let mut a = Rng::new(5);
        let mut b = Rng::new(5);
        for _ in 0..1000 {
            let x = a.below(17);
            assert_eq!(x, b.below(17));
            assert!(x < 17);
        }
    }

    #[test]
    fn zipf_is_skewed() {
        let z = Zipf::new(1000, 0.99);
        let mut r = Rng::new(1);
        let mut hist = vec![0u32; 1000];
        for _ in 0..100_000 {
            hist[z.sample(&mut r) as usize] += 1;
        }
        assert!(hist[0] > hist[10] && hist[10] > hist[500]);
        // Rank 0 carries ~1/zeta(1000) ≈ 13% of the mass at theta=0.99.
        assert!(hist[0] > 10_000 && hist[0] < 16_000, "{}", hist[0]);
    }
}
