//! What every number type of the value-type table must do, checked generically so that a new
//! type is held to it without a line here: big-endian bytes are the little-endian ones
//! reversed; decoding what was encoded gives the same bits; and for floats, widening then
//! narrowing is exact, narrowing rounds to the nearest value (ties to the even one), overflows
//! to infinity and keeps NaN a NaN.

use binrw::Endian;
use ggufrw::schema::{Number, NumberKind, ValueType, ValueTypeVisitor, Wide};
use strum::IntoEnumIterator;

/// splitmix64: random bytes without a dependency, the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn from_bits<T: Number>(bits: u64) -> Option<T> {
    T::decode(&bits.to_le_bytes()[..T::SIZE], Endian::Little)
}

fn float<T: Number>(x: T) -> f64 {
    match x.widen() {
        Wide::Float(f) => f,
        other => panic!("{} widened to {other:?}", T::TYPE.name()),
    }
}

fn check<T: Number>(rng: &mut Rng) {
    let name = T::TYPE.name();
    for _ in 0..20_000 {
        let bits = rng.next();
        let little = &bits.to_le_bytes()[..T::SIZE];
        let Some(x) = T::decode(little, Endian::Little) else {
            continue;
        };
        let mut big = Vec::new();
        x.encode(&mut big, Endian::Big);
        let reversed: Vec<u8> = little.iter().rev().copied().collect();
        assert_eq!(big, reversed, "{name}: big-endian bytes of {x:?}");
        assert_eq!(
            T::decode(&big, Endian::Big).map(T::bits),
            Some(x.bits()),
            "{name}"
        );
        if T::KIND != NumberKind::Float {
            continue;
        }
        let f = float(x);
        if x.is_nan() {
            assert!(f.is_nan(), "{name}: {x:?} widens to {f}");
            assert!(
                T::narrow(Wide::Float(f)).is_some_and(|y| y.is_nan()),
                "{name}: NaN"
            );
            continue;
        }
        assert_eq!(
            T::narrow(Wide::Float(f)).map(T::bits),
            Some(x.bits()),
            "{name}: {x:?} widened and narrowed"
        );
        // The next value away from zero, and the point halfway to it.
        let Some(next) = from_bits::<T>(x.bits() + 1).filter(|n| !n.is_nan()) else {
            continue;
        };
        let g = float(next);
        if T::SIZE < 8 && f.is_finite() && g.is_finite() {
            let mid = (f + g) / 2.0;
            let even = if x.bits() % 2 == 0 { x } else { next };
            assert_eq!(
                T::narrow(Wide::Float(mid)).map(T::bits),
                Some(even.bits()),
                "{name}: {mid} is halfway between {f} and {g}: the even one"
            );
            for t in [0.25, 0.75] {
                let near = f + (g - f) * t;
                let nearest = if t < 0.5 { x } else { next };
                assert_eq!(
                    T::narrow(Wide::Float(near)).map(T::bits),
                    Some(nearest.bits()),
                    "{name}: {near} between {f} and {g}"
                );
            }
        }
    }
    if T::KIND == NumberKind::Float {
        let inf = T::narrow(Wide::Float(f64::MAX)).map(float::<T>);
        if T::SIZE < 8 {
            assert_eq!(inf, Some(f64::INFINITY), "{name}: f64::MAX overflows");
        }
        let nan = T::quiet_nan().expect("a float has a quiet NaN");
        assert!(nan.is_nan(), "{name}: the quiet NaN");
        assert!(T::narrow(Wide::Float(f64::NAN)).is_some_and(|y| y.is_nan()));
    }
}

#[test]
fn every_number_type_encodes_and_converts_as_its_kind_requires() {
    struct Each<'a>(&'a mut Rng, &'a mut Vec<&'static str>);
    impl ValueTypeVisitor for Each<'_> {
        type Out = ();
        fn number<T: Number>(self) {
            check::<T>(self.0);
            self.1.push(T::TYPE.name());
        }
        fn string(self) {}
        fn array(self) {}
    }
    let mut rng = Rng(7);
    let mut checked = Vec::new();
    for ty in ValueType::iter() {
        ty.visit(Each(&mut rng, &mut checked));
    }
    assert!(
        checked.contains(&"float32") && checked.contains(&"uint64"),
        "{checked:?}"
    );
}
