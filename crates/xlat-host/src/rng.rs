//! A small deterministic generator (splitmix64) for chase orders and line offsets.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0), by multiply-shift: no modulo bias worth measuring here.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
    /// Sattolo's algorithm: a random permutation of `0..n` that is one single cycle, so a
    /// chase through it visits every element before it repeats.
    pub fn cycle(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i);
            p.swap(i, j);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sattolo_is_one_cycle() {
        for n in [2, 3, 8, 1000] {
            let p = Rng::new(n as u64).cycle(n);
            // Follow i -> p[i] from 0: back at 0 after exactly n steps.
            let (mut x, mut len) = (0, 0);
            loop {
                x = p[x];
                len += 1;
                if x == 0 {
                    break;
                }
            }
            assert_eq!(len, n);
        }
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::new(1);
        assert!((0..10_000).all(|_| r.below(7) < 7));
    }
}
