//! Float formatting that reproduces Python's output, so that text outputs match khmer's byte for
//! byte: `repr(x)`, `repr(round(x, n))` and `format(x, "W.Pg")`.

/// Splits Rust's shortest round-trip scientific form of a finite, non-zero `x.abs()` into its
/// significant digits and decimal exponent (value = 0.d1d2d3… × 10^(exp+1)).
fn shortest_digits(x: f64) -> (String, i32) {
    let text = format!("{:e}", x.abs());
    let (mantissa, exp) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// `s` with the exponent in Python's style: `e`, a sign, at least two digits.
fn python_exponent(exp: i32) -> String {
    format!("e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// Python's `repr(x)` of a float: the shortest round-trip digits, fixed notation for
/// 1e-4 <= |x| < 1e16 (always with a fractional part), scientific otherwise.
pub fn repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0.0");
    }
    let (digits, exp) = shortest_digits(x);
    let body = if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                format!("{}{}.0", digits, "0".repeat(int_len - digits.len()))
            } else {
                format!("{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        format!("{first}{frac}{}", python_exponent(exp))
    };
    format!("{sign}{body}")
}

/// Python's `repr(round(x, ndigits))`: correctly rounded (ties to even on the exact binary
/// value), then printed with [`repr`].
pub fn round_repr(x: f64, ndigits: usize) -> String {
    if !x.is_finite() {
        return repr(x);
    }
    let rounded: f64 = format!("{x:.ndigits$}").parse().unwrap_or(x);
    repr(rounded)
}

/// Python's `format(x, "{width}.{precision}g")` (precision 0 counts as 1).
pub fn general(x: f64, width: usize, precision: usize) -> String {
    let p = precision.max(1);
    let body = if !x.is_finite() {
        repr(x)
    } else if x == 0.0 {
        if x.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        }
    } else {
        let sci = format!("{:.*e}", p - 1, x);
        let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        if exp >= -4 && exp < p as i32 {
            let decimals = (p as i32 - 1 - exp).max(0) as usize;
            strip_fraction_zeros(&format!("{x:.decimals$}"))
        } else {
            format!("{}{}", strip_fraction_zeros(mantissa), python_exponent(exp))
        }
    };
    format!("{body:>width$}")
}

/// Python's `format(x, "{width}.{precision}e")`.
pub fn scientific(x: f64, width: usize, precision: usize) -> String {
    let body = if x.is_finite() {
        let sci = format!("{x:.precision$e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
        format!("{mantissa}{}", python_exponent(exp.parse().unwrap_or(0)))
    } else {
        repr(x)
    };
    format!("{body:>width$}")
}

/// Removes trailing zeros of a fractional part, and the point if nothing remains after it.
fn strip_fraction_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_matches_python() {
        assert_eq!(repr(0.98), "0.98");
        assert_eq!(repr(1.0), "1.0");
        assert_eq!(repr(0.0), "0.0");
        assert_eq!(repr(-0.0), "-0.0");
        assert_eq!(repr(9.025048735197377e-11), "9.025048735197377e-11");
        assert_eq!(repr(1e16), "1e+16");
        assert_eq!(repr(1.5e16), "1.5e+16");
        assert_eq!(repr(123456789012345.0), "123456789012345.0");
        assert_eq!(repr(0.0001), "0.0001");
        assert_eq!(repr(0.00001), "1e-05");
        assert_eq!(repr(-2.5), "-2.5");
        assert_eq!(repr(100.0), "100.0");
    }

    #[test]
    fn round_repr_matches_python() {
        assert_eq!(round_repr(96.0 / 98.0, 3), "0.98");
        assert_eq!(round_repr(98.0 / 98.0, 3), "1.0");
        assert_eq!(round_repr(0.0, 3), "0.0");
        assert_eq!(round_repr(0.0625, 3), "0.062");
        assert_eq!(round_repr(103.80374145507812, 9), "103.803741455");
        assert_eq!(round_repr(303.7029418945312, 9), "303.702941895");
        assert_eq!(round_repr(1001.0, 9), "1001.0");
    }

    #[test]
    fn general_matches_python() {
        assert_eq!(general(1e6, 3, 6), "1e+06");
        assert_eq!(general(143775875.0, 5, 6), "1.43776e+08");
        assert_eq!(general(40000.0, 5, 6), "40000");
        assert_eq!(general(1.5, 5, 6), "  1.5");
        assert_eq!(general(1e6, 5, 2), "1e+06");
        assert_eq!(general(2.5e5, 5, 2), "2.5e+05");
        assert_eq!(general(0.0001234, 1, 6), "0.0001234");
        assert_eq!(general(0.0, 3, 6), "  0");
    }

    #[test]
    fn scientific_matches_python() {
        assert_eq!(scientific(123456789.0, 17, 6), "     1.234568e+08");
        assert_eq!(scientific(5e-7, 1, 6), "5.000000e-07");
    }
}

/// Python's `format(x, ".{precision}")` (no presentation type): like [`general`], but a
/// number printed in fixed notation keeps at least one digit after the point (`1.0`, `0.5`).
pub fn general_with_point(x: f64, precision: usize) -> String {
    let g = general(x, 0, precision);
    if x.is_finite() && !g.contains(['.', 'e']) {
        format!("{g}.0")
    } else {
        g
    }
}

/// Python's `format(x, ".{decimals}%")`: `x` × 100 in fixed notation, then `%`.
pub fn percent(x: f64, decimals: usize) -> String {
    format!("{:.decimals$}%", x * 100.0)
}

#[cfg(test)]
mod point_and_percent_tests {
    use super::*;

    #[test]
    fn general_with_point_matches_python() {
        assert_eq!(general_with_point(1.0 / 1001.0, 4), "0.000999");
        assert_eq!(general_with_point(1.0 / 2002.0, 4), "0.0004995");
        assert_eq!(general_with_point(0.25261, 4), "0.2526");
        assert_eq!(general_with_point(1.0, 4), "1.0");
        assert_eq!(general_with_point(0.0, 4), "0.0");
        assert_eq!(general_with_point(0.00001234, 4), "1.234e-05");
        assert_eq!(general_with_point(12345.0, 4), "1.234e+04");
    }

    #[test]
    fn percent_matches_python() {
        assert_eq!(percent(0.5, 1), "50.0%");
        assert_eq!(percent(1.0, 1), "100.0%");
        assert_eq!(percent(1.0 / 1001.0, 1), "0.1%");
    }
}
