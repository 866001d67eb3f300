//! The IQ types' lookup tables, held in a form of our own that states their structure, and
//! expanded into the integer forms the arithmetic reads at compile time.
//!
//! **Grids.** Each grid is a set of patterns of 8 elements (IQ2, IQ1) or 4 elements (IQ3), each
//! element one of a few *levels*: 3 levels for the 8-element grids (a lattice of 3⁸ = 6561
//! patterns), 8 levels for the 4-element ones (8⁴ = 4096 patterns). A pattern of level indices
//! `(d₀, d₁, …)` is numbered `Σ dᵢ·3ⁱ` (or `Σ dᵢ·8ⁱ`): the last element is the most significant.
//! A grid is stored as the bitmap of the lattice points it holds (bit `p % 64` of word `p / 64`),
//! and its entry `k` is its `k`-th point in increasing number: that is ggml's order.
//!
//! From a point come its *packed word* (the level indices, 2 or 3 bits each, element 0 in the
//! lowest bits: the index space ggml's quantizers search) and its *values* (each element's
//! level looked up in the grid's table of levels: the bytes ggml's dequantizers read).
//!
//! **Rules.** `ksigns_iq2xs[i]` is `i` with bit 7 set when `i` has an odd number of bits (so
//! that every 8-bit sign pattern has an even number of minus signs); `kmask_iq2xs[j]` is
//! `1 << j`. The IQ4 levels have no rule: they are listed.

/// The IQ4_NL and IQ4_XS levels (ggml's `kvalues_iq4nl`): 16 non-linear steps.
pub(super) const IQ4NL_VALUES: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// The offset IQ1_S and IQ1_M add to every grid value (`IQ1S_DELTA`, `IQ1M_DELTA`), with the
/// sign the block stores.
pub(super) const IQ1_DELTA: f32 = 0.125;

/// `ksigns_iq2xs`: 7 sign bits and their parity as the 8th.
pub(super) static KSIGNS: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = i as u8 | (((i as u32).count_ones() as u8 & 1) << 7);
        i += 1;
    }
    t
};

/// Patterns in the lattice of 8 elements at 3 levels.
const TERNARY_POINTS: usize = 6561;
/// Patterns in the lattice of 4 elements at 8 levels.
const OCTAL_POINTS: usize = 4096;

/// The packed words (2 bits per element) of the points of an 8-element, 3-level grid.
const fn ternary_words<const N: usize>(set: &[u64; TERNARY_POINTS.div_ceil(64)]) -> [u16; N] {
    let mut words = [0u16; N];
    let (mut n, mut p) = (0, 0);
    while p < TERNARY_POINTS {
        if (set[p / 64] >> (p % 64)) & 1 != 0 {
            assert!(
                n < N,
                "the bitmap holds more points than the grid has entries"
            );
            let (mut word, mut rest, mut i) = (0u16, p, 0);
            while i < 8 {
                word |= ((rest % 3) as u16) << (2 * i);
                rest /= 3;
                i += 1;
            }
            words[n] = word;
            n += 1;
        }
        p += 1;
    }
    assert!(
        n == N,
        "the bitmap holds fewer points than the grid has entries"
    );
    words
}

/// The packed words (3 bits per element: the point's number itself) of a 4-element, 8-level
/// grid.
const fn octal_words<const N: usize>(set: &[u64; OCTAL_POINTS / 64]) -> [u16; N] {
    let mut words = [0u16; N];
    let (mut n, mut p) = (0, 0);
    while p < OCTAL_POINTS {
        if (set[p / 64] >> (p % 64)) & 1 != 0 {
            assert!(
                n < N,
                "the bitmap holds more points than the grid has entries"
            );
            words[n] = p as u16;
            n += 1;
        }
        p += 1;
    }
    assert!(
        n == N,
        "the bitmap holds fewer points than the grid has entries"
    );
    words
}

/// Each 8-element word's values, its 2-bit level indices looked up in `levels`.
const fn values8<T: Copy, const N: usize>(
    words: &[u16; N],
    levels: [T; 3],
    zero: T,
) -> [[T; 8]; N] {
    let mut grid = [[zero; 8]; N];
    let mut k = 0;
    while k < N {
        let mut i = 0;
        while i < 8 {
            grid[k][i] = levels[((words[k] >> (2 * i)) & 3) as usize];
            i += 1;
        }
        k += 1;
    }
    grid
}

/// Each 4-element word's values, its 3-bit level indices looked up in `levels`.
const fn values4<const N: usize>(words: &[u16; N], levels: [u8; 8]) -> [[u8; 4]; N] {
    let mut grid = [[0u8; 4]; N];
    let mut k = 0;
    while k < N {
        let mut i = 0;
        while i < 4 {
            grid[k][i] = levels[((words[k] >> (3 * i)) & 7) as usize];
            i += 1;
        }
        k += 1;
    }
    grid
}

/// The levels of the IQ2 grids' elements.
const IQ2_LEVELS: [u8; 3] = [8, 25, 43];
/// The levels of the IQ1 grid's elements.
const IQ1_LEVELS: [i8; 3] = [-1, 0, 1];
/// The levels of the IQ3_XXS grid's elements (steps of 8 from 4, but the last is 62).
const IQ3XXS_LEVELS: [u8; 8] = [4, 12, 20, 28, 36, 44, 52, 62];
/// The levels of the IQ3_S grid's elements: the odd numbers 1 to 15.
const IQ3S_LEVELS: [u8; 8] = [1, 3, 5, 7, 9, 11, 13, 15];

/// The packed words of the IQ2_XXS grid (ggml's `kgrid_2bit_256`), which its quantizer
/// searches.
pub(super) static IQ2XXS_WORDS: [u16; 256] = ternary_words(&IQ2XXS_SET);
/// The packed words of the IQ2_XS grid (`kgrid_2bit_512`).
pub(super) static IQ2XS_WORDS: [u16; 512] = ternary_words(&IQ2XS_SET);
/// The packed words of the IQ2_S grid, which its quantizer searches.
pub(super) static IQ2S_WORDS: [u16; 1024] = ternary_words(&IQ2S_SET);
/// The packed words of the IQ1_S / IQ1_M grid.
pub(super) static IQ1S_WORDS: [u16; 2048] = ternary_words(&IQ1S_SET);
/// The packed words of the IQ3_XXS grid.
pub(super) static IQ3XXS_WORDS: [u16; 256] = octal_words(&IQ3XXS_SET);
/// The packed words of the IQ3_S grid.
pub(super) static IQ3S_WORDS: [u16; 512] = octal_words(&IQ3S_SET);

/// `iq2xxs_grid`: 256 patterns of 8 bytes.
pub(super) static IQ2XXS_GRID: [[u8; 8]; 256] = values8(&IQ2XXS_WORDS, IQ2_LEVELS, 0);
/// `iq2xs_grid`: 512 patterns of 8 bytes.
pub(super) static IQ2XS_GRID: [[u8; 8]; 512] = values8(&IQ2XS_WORDS, IQ2_LEVELS, 0);
/// `iq2s_grid`: 1024 patterns of 8 bytes.
pub(super) static IQ2S_GRID: [[u8; 8]; 1024] = values8(&IQ2S_WORDS, IQ2_LEVELS, 0);
/// `iq1s_grid`: 2048 patterns of 8 signed bytes.
pub(super) static IQ1S_GRID: [[i8; 8]; 2048] = values8(&IQ1S_WORDS, IQ1_LEVELS, 0);
/// `iq3xxs_grid`: 256 patterns of 4 bytes.
pub(super) static IQ3XXS_GRID: [[u8; 4]; 256] = values4(&IQ3XXS_WORDS, IQ3XXS_LEVELS);
/// `iq3s_grid`: 512 patterns of 4 bytes.
pub(super) static IQ3S_GRID: [[u8; 4]; 512] = values4(&IQ3S_WORDS, IQ3S_LEVELS);

// The grids as bitmaps over their lattices (see the module's description).

/// IQ2_XXS: 256 of the 6561 patterns of 8 elements at 3 levels.
const IQ2XXS_SET: [u64; TERNARY_POINTS.div_ceil(64)] = [
    0x4141441055141555,
    0x0000100044140400,
    0x0040001400400400,
    0x1050000004000000,
    0x4004140100114140,
    0x0500001000400450,
    0x0001000050000010,
    0x4004144100004000,
    0x0400000400001414,
    0x0000000000040000,
    0x0000000000100400,
    0x0010100414000000,
    0x1001040011040040,
    0x0000000100404000,
    0x0000000004010000,
    0x0000400440041000,
    0x0000100000000004,
    0x1000400000001000,
    0x0000000000000000,
    0x0040000004000105,
    0x0000000000110000,
    0x0000000001000000,
    0x0414000000000040,
    0x0000050100010000,
    0x0000001010000000,
    0x0000000000500000,
    0x0000414000000000,
    0x0040000000004001,
    0x0000004000040000,
    0x0000000000000000,
    0x0000040040000040,
    0x0000000004000000,
    0x0000000000000000,
    0x0000000001000000,
    0x0110104144105000,
    0x0000400010000414,
    0x0040400000440400,
    0x4000000100404000,
    0x0010000000010010,
    0x0000001004000010,
    0x0000000100000000,
    0x0414000000000000,
    0x0000000000011000,
    0x0401100000000004,
    0x0004000000000000,
    0x0050441000040000,
    0x0100000104000000,
    0x0000000000040000,
    0x0000000000000001,
    0x0000000000000040,
    0x0001000001400000,
    0x0400000000000000,
    0x0000000100000000,
    0x0400000004100400,
    0x0040000000000000,
    0x0004000000000000,
    0x0000000000000000,
    0x0001000001000041,
    0x0040000000004000,
    0x0000400000000000,
    0x0011000000001000,
    0x0000000000000000,
    0x0400000000001400,
    0x0000000000000000,
    0x0000000000000000,
    0x0000000000000001,
    0x0000000000000000,
    0x0000000000000000,
    0x0004000041400000,
    0x0040040000004000,
    0x0000000000000004,
    0x0000000000000004,
    0x0040001000441400,
    0x0400000004000000,
    0x0004000010000000,
    0x4000000001000040,
    0x0000000000000000,
    0x0000000000010000,
    0x0000010000000000,
    0x0104000000000000,
    0x0100000000000410,
    0x0040000000004000,
    0x0001000000000000,
    0x0040000400000000,
    0x0000000000000001,
    0x0000000001000000,
    0x0000000000000000,
    0x0000000000000000,
    0x0100000000001000,
    0x0000000000000000,
    0x0000000000000000,
    0x0000100000000400,
    0x0000000100000004,
    0x0000040000000000,
    0x0000000000000000,
    0x0000000000000400,
    0x0000000000000000,
    0x0000000000000000,
    0x0000000000000000,
    0x0000000000040000,
    0x0000000000000004,
    0x0000000000000000,
    0x0000000000000000,
];

/// IQ2_XS: 512 of the 6561 patterns of 8 elements at 3 levels.
const IQ2XS_SET: [u64; TERNARY_POINTS.div_ceil(64)] = [
    0x1541455551555555,
    0x4145505555540145,
    0x4010515400010510,
    0x5550000101000441,
    0x0004140115154145,
    0x0404010500414550,
    0x0005100041400000,
    0x1105554000004000,
    0x0540400010010414,
    0x0010400000040001,
    0x0000000104000100,
    0x4550515554011000,
    0x1051540001054041,
    0x5000500100004140,
    0x0000010000400011,
    0x1001450041455000,
    0x0100004140000004,
    0x0400400000000000,
    0x0000000000010000,
    0x0400004004000505,
    0x0000000000110000,
    0x0000000000000004,
    0x5555000000000040,
    0x0400010000414010,
    0x0010001040001050,
    0x0000010000100000,
    0x4000414400000400,
    0x0040000000000001,
    0x1000000010040000,
    0x0000000001000100,
    0x0000040141100000,
    0x0000000400100001,
    0x0000010010000000,
    0x0144000000001001,
    0x1105554145555000,
    0x0500414550000414,
    0x0141404000440001,
    0x4000000000000140,
    0x0010000414014515,
    0x0000041001050001,
    0x4000010100400000,
    0x0414000000000010,
    0x0000000101011000,
    0x0040004100001004,
    0x0000000000400000,
    0x1041455000000000,
    0x4140000004000105,
    0x0000000000050004,
    0x0000001000000040,
    0x0004040105400000,
    0x0000410100004010,
    0x0000001040000000,
    0x0000100000001000,
    0x0000404000400404,
    0x0140100000010000,
    0x0000000000000000,
    0x4000004000000000,
    0x0100101001000041,
    0x0000000000005000,
    0x0010000000000000,
    0x4001000100000004,
    0x0000000000000000,
    0x0000000110000400,
    0x0000000000001000,
    0x0000001000000000,
    0x0000000001000000,
    0x0000000000000400,
    0x0010100000000400,
    0x0415010515400000,
    0x0001155000005000,
    0x0100000000041004,
    0x0001400000000400,
    0x0040001000541441,
    0x0100000004000040,
    0x0400004000000000,
    0x1000000100000000,
    0x0014010000040004,
    0x0000000000040400,
    0x0004000000000000,
    0x0105100404100000,
    0x0000010001000400,
    0x0001000000100001,
    0x0400000000000000,
    0x0000004400004000,
    0x0000000000001041,
    0x0014000000001000,
    0x0000000100000000,
    0x0400000000000000,
    0x0000000400000000,
    0x0000000000000100,
    0x0000001000000010,
    0x0000000404014500,
    0x4000000000010000,
    0x0001144000000010,
    0x0004000100000010,
    0x4000000000400000,
    0x0000000000000000,
    0x0000000000000000,
    0x0040000400004000,
    0x1040000000000045,
    0x0500000000000004,
    0x0000050000000000,
    0x0000000100010000,
];

/// IQ2_S: 1024 of the 6561 patterns of 8 elements at 3 levels.
const IQ2S_SET: [u64; TERNARY_POINTS.div_ceil(64)] = [
    0x1555455551555555,
    0x5545505155551105,
    0x5010515414150514,
    0x5550101111000455,
    0x5145541555555545,
    0x5414555514555550,
    0x1451000455401051,
    0x1155154000105004,
    0x0540010110515555,
    0x0040401051440455,
    0x0000100510140100,
    0x4551515554004000,
    0x5555541451151555,
    0x5000145505155545,
    0x0414000504414114,
    0x1455551455455000,
    0x5505155540105154,
    0x0514400010500414,
    0x4000001000041401,
    0x0140105154045155,
    0x0010500414550000,
    0x1000041004000010,
    0x5154000000000400,
    0x0011010405415115,
    0x1401050540415054,
    0x0104510010100004,
    0x0514554400050000,
    0x1440001050041455,
    0x0000110004140105,
    0x0004000400010500,
    0x1050001411000000,
    0x0004150000400000,
    0x0000100000000000,
    0x0140040000004004,
    0x1555554555555000,
    0x5505554550514414,
    0x1541401051541455,
    0x4000005004145104,
    0x4550515554555555,
    0x1051541455550041,
    0x5004145500004150,
    0x5514100000400010,
    0x0001040041455051,
    0x0100004140105154,
    0x0000400010500040,
    0x1555455000000000,
    0x5540005154145555,
    0x0010500414550515,
    0x1400041401051440,
    0x5154145555000000,
    0x0414550000414010,
    0x1400000040001050,
    0x0000000000110004,
    0x0040414010515400,
    0x0040001050000001,
    0x1000100000000000,
    0x4400004000000000,
    0x1040041451051545,
    0x0004140105154000,
    0x0400010400100010,
    0x1451010000000100,
    0x0000004000105004,
    0x0010001010000414,
    0x0000000000040004,
    0x0000105000100000,
    0x0010010000100000,
    0x0000000000004000,
    0x0000000400000000,
    0x5414114515404000,
    0x1455450001411011,
    0x1140004140005154,
    0x0000000010500015,
    0x0041455011555400,
    0x4140105154000105,
    0x0010500001010000,
    0x1000000000000050,
    0x0000000105000141,
    0x4000010000014040,
    0x0004000000000000,
    0x5545010000400500,
    0x0000414010515410,
    0x0000101050001411,
    0x0000100004140000,
    0x4010515440000000,
    0x1050004001000041,
    0x1100000000004000,
    0x0010001000000010,
    0x0001100041400000,
    0x0000005000000000,
    0x0000000000001100,
    0x0040000000000000,
    0x0000105410111100,
    0x0010000001040000,
    0x4004100000000400,
    0x5100014400000014,
    0x0100000000400010,
    0x0000000010001040,
    0x0000000000000000,
    0x0040000000000004,
    0x0100000000000040,
    0x0400004000000000,
    0x0000011401400000,
    0x0000000100001000,
];

/// IQ1_S and IQ1_M: 2048 of the 6561 patterns of 8 elements at 3 levels.
const IQ1S_SET: [u64; TERNARY_POINTS.div_ceil(64)] = [
    0x514202a085142555,
    0xa28a2086a8314508,
    0x14508514202a081a,
    0xa005152545442082,
    0x8208001888208202,
    0x0aaabb88a02a03a0,
    0xaa0a0022000baa90,
    0x4508514008a0828c,
    0x0851421450808821,
    0x2a8008a09808308a,
    0x4248208514214508,
    0x20a0c22c01450855,
    0xa2aaa8242a00268a,
    0x0028280808afe208,
    0xa82028aa284202a0,
    0xa8bab9089b0a2080,
    0x3aaaaea289aeca20,
    0xb80e82bbbaeaeb7c,
    0x2202920ed3caba22,
    0x820aba8aa8202200,
    0x3ba2e04a2a000802,
    0x81408100a22b2022,
    0x8514012208288aaa,
    0x5421450920821550,
    0x203aa8230208a085,
    0xa208514254208284,
    0x082a021450950820,
    0x200248a08082a8b8,
    0xab2802a268a28208,
    0x083082082085082a,
    0xa085142145004045,
    0x8229014500514200,
    0x1430a1082a828a00,
    0x2145082882145005,
    0x2aaa200202208514,
    0xa828ae8ab1122000,
    0x0a820070a8aaa1ba,
    0x8200840222280208,
    0xaa2ab0eaa0804800,
    0xa7daea22ba8b20c2,
    0xaa2ab092a86e8b8b,
    0x48202a0c448a8b72,
    0x20aa082a8a284084,
    0xa09aafa222a2ccc8,
    0xa82a00020002a8e8,
    0xa2a28ba080200088,
    0xba0a328280a0ba28,
    0x2ba0a2ebfebab8be,
    0x00a2ea280a8a08a2,
    0xdeeaa4fa0c0232a1,
    0xeb7ebe8d2ea82bef,
    0xdeba7de6bf7ff7fa,
    0x12fa26bfff27fb69,
    0x0ebeaa10228ae1e9,
    0xae820ba8b208aa84,
    0x62048083e924baff,
    0x002ba40aa8f2682c,
    0x0012aae208082a02,
    0x82c920a60a2a8202,
    0x8c00a20028829089,
    0x6c00080882001380,
    0x8abea602bbaaaa8a,
    0xd02e976b8002caa0,
    0xdeaa2e108210e9b2,
    0x820a0004a5d11528,
    0x20a1010820828a00,
    0xa0843222ba39aa82,
    0x0262a28a00188009,
    0xac21450051441481,
    0x20aa085142145082,
    0x45082a120a87aa28,
    0x08514208a0051421,
    0x22a240a002200145,
    0x8a6a08a208008800,
    0x0a200080aaaab86e,
    0x5044082122c8e282,
    0x8515208a09514214,
    0x2a2aaa080a861450,
    0x21450851420a0080,
    0xe2085142145000a8,
    0x082a82180a828820,
    0x0a028bb08aaaa2aa,
    0x0aaa80822820aa2a,
    0x220288a900280828,
    0xba8a08b8280bbea0,
    0xaef8a4baffaeb24b,
    0x30a0b668285220aa,
    0x6a220828020a80e6,
    0x2baaaa020a208062,
    0x0808a2a0a9a2eaaa,
    0x0e8200228aa02010,
    0x400aa08514214500,
    0x4a0006a921450851,
    0x440d1000a50802aa,
    0x0514214508288214,
    0x0020f2ac82820800,
    0x20ba0a280aaa0000,
    0x280948820002a2ea,
    0x0051454b110014e9,
    0x5142145002a80145,
    0x400a288808248808,
    0x02a0051401450008,
    0x0000000145085140,
];

/// IQ3_XXS: 256 of the 4096 patterns of 4 elements at 8 levels.
const IQ3XXS_SET: [u64; OCTAL_POINTS / 64] = [
    0x2800000402058a15,
    0x010010020522050a,
    0x200082008a050215,
    0x0100000000200582,
    0x2800801080000800,
    0x0000040004000082,
    0x0010000020000000,
    0x0002000800005100,
    0x00000180150a050a,
    0x0000000000050205,
    0x040000000102050a,
    0x0040004002010005,
    0x0000010000000022,
    0x0200004000110000,
    0x0000000000000020,
    0x0000000100040000,
    0x0000000402450a05,
    0x018800000102052a,
    0x0000200180058205,
    0x1100000000001102,
    0x0000080020000000,
    0x1000000200800008,
    0x0000000000000000,
    0x000000200000400a,
    0x04200100000a0502,
    0x0000005002010005,
    0x040004000020010a,
    0x0000000008000200,
    0x0400008001000000,
    0x0000200000040041,
    0x0008000040001000,
    0x0001000008000000,
    0x00008800a0008010,
    0x1000000000000000,
    0x0041000180010000,
    0x0000002000000080,
    0x0010020000000010,
    0x0100000800200000,
    0x0000000000000000,
    0x0000000001000520,
    0x0100000200000400,
    0x0000200000400041,
    0x0400000004001000,
    0x0000080000000004,
    0x0400000000880100,
    0x0000000002000004,
    0x0000010000000000,
    0x0000000400100000,
    0x0010005000100000,
    0x0002000000020000,
    0x0010000000008000,
    0x0000000041000000,
    0x0000001000000000,
    0x0000040000000020,
    0x0000000008000000,
    0x0000000000020008,
    0x00000400040001a8,
    0x0000000100400000,
    0x0000042000000400,
    0x0001000008002001,
    0x0000000200020000,
    0x0000000000100005,
    0x0000000001000000,
    0x0000000000000000,
];

/// IQ3_S: 512 of the 4096 patterns of 4 elements at 8 levels.
const IQ3S_SET: [u64; OCTAL_POINTS / 64] = [
    0x92050aa5082357a7,
    0x0422001022892317,
    0x09000aa4112249a3,
    0x228005104a052208,
    0x0100020904128801,
    0x084000a208450014,
    0x0200040002000a40,
    0x0000110008450015,
    0x040250005205ab17,
    0x410005020902114b,
    0x040120090411a401,
    0x0104000211820992,
    0x000011440a001428,
    0x0000020005020902,
    0x0000005000910000,
    0x010400022002050a,
    0x2980052a058a55ab,
    0x0000020412248905,
    0x12008802810a0092,
    0x004001040a140225,
    0x2400000224090082,
    0x0100080180040210,
    0x0002200000020085,
    0x0000010801400220,
    0x020802942a04aa04,
    0x44010001000a102a,
    0x0000010014010401,
    0x0800208a018a1102,
    0x0011040002044208,
    0x0800401004200502,
    0x0000000200004000,
    0x000000002005000a,
    0x0100010204910411,
    0x0000220821040a84,
    0x010480010802210a,
    0x0000000022050a10,
    0x0200000180100005,
    0x00040000000200a0,
    0x0001000010000800,
    0x0000020801002100,
    0x1040049100041104,
    0x040000000402042a,
    0x0000080041080201,
    0x0820021000800184,
    0x0000004004010012,
    0x00000a0000400400,
    0x0000000400000000,
    0x0000000000040014,
    0x000100000a002a00,
    0x0010000000810001,
    0x0104200410000400,
    0x0000000100021001,
    0x0004000800200000,
    0x0001000010000009,
    0x0000000100000020,
    0x0000000000000a00,
    0x0004100140050091,
    0x0000002800100204,
    0x0000020001024112,
    0x0000080024000004,
    0x0000010000010822,
    0x0000000400040000,
    0x0000000002000004,
    0x0000000000000001,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a (64-bit) over bytes.
    fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
        bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }

    /// ggml's integer form of an 8-byte grid: `uint64_t` entries, byte `j` element `j`.
    fn ggml_u64<T: Copy + Into<i16>, const N: usize>(grid: &[[T; 8]; N]) -> Vec<u64> {
        grid.iter()
            .map(|e| u64::from_le_bytes(e.map(|v| v.into() as u8)))
            .collect()
    }

    /// ggml's integer form of a 4-byte grid: `uint32_t` entries.
    fn ggml_u32<const N: usize>(grid: &[[u8; 4]; N]) -> Vec<u32> {
        grid.iter().map(|e| u32::from_le_bytes(*e)).collect()
    }

    // The checksums below are FNV-1a over the little-endian bytes of each table as ggml's
    // `ggml-common.h` declares it (llama.cpp 0c1e5709, as vendored in llama-cpp-python 0.3.36),
    // computed once from that header; the entries checked by value are copied from it.

    #[test]
    fn the_grids_rebuild_ggmls_tables() {
        let iq2xxs = ggml_u64(&IQ2XXS_GRID);
        assert_eq!(iq2xxs[0], 0x0808080808080808);
        assert_eq!(iq2xxs[1], 0x080808080808082b);
        assert_eq!(iq2xxs[128], 0x082b2b0808082b08);
        assert_eq!(iq2xxs[255], 0x2b2b2b1908081908);
        assert_eq!(
            fnv1a(iq2xxs.iter().flat_map(|v| v.to_le_bytes())),
            0xbb4ee025b5ac6e8e
        );

        let iq2xs = ggml_u64(&IQ2XS_GRID);
        assert_eq!(iq2xs[256], 0x190808080808192b);
        assert_eq!(iq2xs[511], 0x2b2b2b2b2b2b2b2b);
        assert_eq!(
            fnv1a(iq2xs.iter().flat_map(|v| v.to_le_bytes())),
            0xc9b1ee61e79909bd
        );

        let iq2s = ggml_u64(&IQ2S_GRID);
        assert_eq!(iq2s[512], 0x19080819082b1919);
        assert_eq!(iq2s[1023], 0x2b2b2b2b2b2b2b2b);
        assert_eq!(
            fnv1a(iq2s.iter().flat_map(|v| v.to_le_bytes())),
            0x123edd38a3b62b90
        );

        let iq1s = ggml_u64(&IQ1S_GRID);
        assert_eq!(iq1s[0], 0xffffffffffffffff);
        assert_eq!(iq1s[1], 0xffffffffffffff01);
        assert_eq!(iq1s[1024], 0x0000000000ff0100);
        assert_eq!(iq1s[2047], 0x0101010101010101);
        assert_eq!(
            fnv1a(iq1s.iter().flat_map(|v| v.to_le_bytes())),
            0x6703ed863501ae2e
        );

        let iq3xxs = ggml_u32(&IQ3XXS_GRID);
        assert_eq!(iq3xxs[0], 0x04040404);
        assert_eq!(iq3xxs[128], 0x141c3e04);
        assert_eq!(iq3xxs[255], 0x3e341c04);
        assert_eq!(
            fnv1a(iq3xxs.iter().flat_map(|v| v.to_le_bytes())),
            0xdfa5dc83d6a155d5
        );

        let iq3s = ggml_u32(&IQ3S_GRID);
        assert_eq!(iq3s[1], 0x01010103);
        assert_eq!(iq3s[256], 0x05090507);
        assert_eq!(iq3s[511], 0x0f0f0101);
        assert_eq!(
            fnv1a(iq3s.iter().flat_map(|v| v.to_le_bytes())),
            0xfa37020c25b44829
        );
    }

    #[test]
    fn the_rules_rebuild_ggmls_tables() {
        assert_eq!(KSIGNS[1], 0x81);
        assert_eq!(KSIGNS[64], 0xc0);
        assert_eq!(fnv1a(KSIGNS), 0xf19ba8f8c3292ba5);
        assert_eq!(fnv1a((0..8).map(|j| 1u8 << j)), 0x0af7003a53c25e16);
        assert_eq!(fnv1a(IQ4NL_VALUES.map(|v| v as u8)), 386472645676896117);
    }

    #[test]
    fn the_words_are_the_grids_level_indices() {
        for (w, g) in IQ2S_WORDS.iter().zip(&IQ2S_GRID) {
            for (i, &v) in g.iter().enumerate() {
                assert_eq!(IQ2_LEVELS[usize::from((w >> (2 * i)) & 3)], v);
            }
        }
        for (w, g) in IQ3S_WORDS.iter().zip(&IQ3S_GRID) {
            for (i, &v) in g.iter().enumerate() {
                assert_eq!(2 * ((w >> (3 * i)) & 7) + 1, u16::from(v));
            }
        }
        // Strictly increasing: each grid is a set, in ggml's order.
        assert!(IQ1S_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(IQ3XXS_WORDS.windows(2).all(|w| w[0] < w[1]));
    }
}
