//! Latency histograms in the result document: hdrhistogram V2 + deflate, base64
//! (standard alphabet), in microseconds. A fan-out child sends its three histograms
//! at full precision ([`super::fanout`]); every row keeps a compact copy of its
//! time-to-last-byte histogram ([`cdf_histogram`], two significant digits: 1% wide
//! buckets, a few hundred bytes) from which the plot draws the latency CDF, every
//! bucket of it ([`cdf_points`]).

use std::io::{Cursor, Read};

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Significant digits of a row's CDF histogram: buckets 1% wide, finer than a
/// plot's pixel on a log axis, and a few hundred bytes per row.
pub(crate) const CDF_SIGNIFICANT_DIGITS: u8 = 2;

/// A histogram that could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("histogram {name}: {reason}")]
pub struct HistogramError {
    pub name: &'static str,
    pub reason: DecodeProblem,
}

/// Why a stored histogram's text is not one s3sweep reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeProblem {
    #[error("{bytes} bytes of text; a histogram is at most {} bytes", 2 * MAX_DECODED_HISTOGRAM_BYTES)]
    TooLong { bytes: usize },
    #[error("not base64: {0}")]
    NotBase64(String),
    #[error("not an hdrhistogram V2 encoding: a short header")]
    ShortHeader,
    #[error("not an hdrhistogram V2 encoding: an unknown cookie")]
    UnknownCookie,
    #[error("not an hdrhistogram V2 encoding: the header claims {claimed} {what} bytes, {present} are present")]
    Length {
        what: &'static str,
        claimed: usize,
        present: usize,
    },
    /// `reason`: the inflater's or the decoder's own words.
    #[error("not an hdrhistogram V2 encoding: {0}")]
    Encoding(String),
    #[error("inflates to more than {MAX_DECODED_HISTOGRAM_BYTES} bytes; s3sweep's histograms are far smaller")]
    TooLarge,
    #[error("claims {digits} significant digits; s3sweep writes at most {MAX_SIGNIFICANT_DIGITS}")]
    Digits { digits: u32 },
    #[error("claims an invalid range {low}..{high}")]
    Range { low: u64, high: u64 },
}

/// Serializes a histogram (V2 + deflate, base64).
pub(crate) fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(bytes),
        // Only fails on I/O into a Vec (cannot happen) or a histogram too large to encode.
        Err(e) => {
            tracing::error!(error = ?e, "serializing a histogram");
            String::new()
        }
    }
}

/// Most bytes a histogram's inflated encoding may take: a full-precision (3 digit)
/// histogram over every u64 value is about 56,000 counts, at most 9 bytes each.
pub(crate) const MAX_DECODED_HISTOGRAM_BYTES: usize = 1 << 20;
/// Most significant digits a stored histogram may claim: s3sweep writes 2 and 3;
/// every extra digit multiplies the counts array (5 digits is 49 MB).
const MAX_SIGNIFICANT_DIGITS: u32 = 3;
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
const V2_HEADER_BYTES: usize = 40;

/// Reads a histogram written by [`encode_histogram`]. What it allocates is bounded by
/// the bytes actually present: the header's claimed lengths, digits and range are
/// checked against the text before anything is sized from them.
pub fn decode_histogram(name: &'static str, text: &str) -> Result<Histogram<u64>, HistogramError> {
    let err = |reason: DecodeProblem| HistogramError { name, reason };
    if text.len() > 2 * MAX_DECODED_HISTOGRAM_BYTES {
        return Err(err(DecodeProblem::TooLong { bytes: text.len() }));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| err(DecodeProblem::NotBase64(e.to_string())))?;
    let plain = inflate_checked(&bytes).map_err(err)?;
    check_v2_header(&plain).map_err(err)?;
    Deserializer::new()
        .deserialize(&mut Cursor::new(plain))
        .map_err(|e| err(DecodeProblem::Encoding(format!("{e:?}"))))
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The uncompressed V2 encoding inside `bytes` (a V2 + deflate encoding, or a plain
/// V2 one), inflated to at most [`MAX_DECODED_HISTOGRAM_BYTES`]; the claimed
/// compressed length must be the bytes present.
fn inflate_checked(bytes: &[u8]) -> Result<Vec<u8>, DecodeProblem> {
    match be_u32(bytes, 0) {
        Some(V2_COOKIE) => Ok(bytes.to_vec()),
        Some(V2_COMPRESSED_COOKIE) => {
            let claimed = be_u32(bytes, 4).ok_or(DecodeProblem::ShortHeader)? as usize;
            let present = bytes.len() - 8;
            if claimed != present {
                return Err(DecodeProblem::Length {
                    what: "compressed",
                    claimed,
                    present,
                });
            }
            let mut plain = Vec::new();
            let limit = MAX_DECODED_HISTOGRAM_BYTES as u64 + 1;
            flate2::read::ZlibDecoder::new(&bytes[8..])
                .take(limit)
                .read_to_end(&mut plain)
                .map_err(|e| DecodeProblem::Encoding(e.to_string()))?;
            if plain.len() > MAX_DECODED_HISTOGRAM_BYTES {
                return Err(DecodeProblem::TooLarge);
            }
            Ok(plain)
        }
        _ => Err(DecodeProblem::UnknownCookie),
    }
}

/// The V2 header's claims checked against `plain`: the payload length is the bytes
/// present, at most [`MAX_SIGNIFICANT_DIGITS`] digits, a valid range.
fn check_v2_header(plain: &[u8]) -> Result<(), DecodeProblem> {
    let short = DecodeProblem::ShortHeader;
    if be_u32(plain, 0) != Some(V2_COOKIE) || plain.len() < V2_HEADER_BYTES {
        return Err(short);
    }
    let claimed = be_u32(plain, 4).ok_or(short.clone())? as usize;
    let present = plain.len() - V2_HEADER_BYTES;
    if claimed != present {
        return Err(DecodeProblem::Length {
            what: "payload",
            claimed,
            present,
        });
    }
    let digits = be_u32(plain, 12).ok_or(short.clone())?;
    if digits > MAX_SIGNIFICANT_DIGITS {
        return Err(DecodeProblem::Digits { digits });
    }
    let (low, high) = (be_u64(plain, 16).ok_or(short.clone())?, be_u64(plain, 24).ok_or(short)?);
    if low == 0 || high < low.saturating_mul(2) {
        return Err(DecodeProblem::Range { low, high });
    }
    Ok(())
}

/// The compact copy of `h` a row keeps: every recorded bucket of `h` counted into
/// buckets of [`CDF_SIGNIFICANT_DIGITS`] digits (auto-resizing, so any value fits).
pub(crate) fn cdf_histogram(h: &Histogram<u64>) -> Histogram<u64> {
    let mut out = Histogram::<u64>::new(CDF_SIGNIFICANT_DIGITS).expect("2 significant digits is valid");
    for v in h.iter_recorded() {
        // An auto-resizing histogram takes any value; counts only add.
        let _ = out.record_n(v.value_iterated_to(), v.count_at_value());
    }
    out
}

/// The row field: [`cdf_histogram`] of `h`, encoded; `None` for an empty histogram.
pub fn encode_cdf(h: &Histogram<u64>) -> Option<String> {
    (!h.is_empty()).then(|| encode_histogram(&cdf_histogram(h)))
}

/// The CDF of a microsecond histogram, one point per recorded bucket: (the bucket's
/// upper value in ms, the fraction of samples at or below it), ascending; the last
/// point is at 1.
pub(crate) fn cdf_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let total = h.len().max(1) as f64;
    let mut seen = 0u64;
    h.iter_recorded()
        .map(|v| {
            seen += v.count_at_value();
            (
                h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0,
                seen as f64 / total,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stats::histogram_us;

    fn hist(values_us: &[u64]) -> Histogram<u64> {
        let mut h = histogram_us();
        for &v in values_us {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn histograms_round_trip() {
        let h = hist(&[100, 250, 250, 4_000, 1_000_000]);
        let back = decode_histogram("ttfb_us", &encode_histogram(&h)).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(back.max(), h.max());
        let err = decode_histogram("ttfb_us", "not base64!").unwrap_err();
        assert!(err.to_string().contains("ttfb_us"), "{err}");
        let err = decode_histogram("ttlb_us", "AAAA").unwrap_err();
        assert!(err.to_string().contains("V2"), "{err}");
    }

    #[test]
    fn crafted_headers_are_refused_before_anything_is_sized_from_them() {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        // A plain V2 header claiming a 4 GiB payload (56 bytes in all).
        let mut plain = Vec::new();
        plain.extend_from_slice(&V2_COOKIE.to_be_bytes());
        plain.extend_from_slice(&u32::MAX.to_be_bytes());
        plain.extend_from_slice(&0u32.to_be_bytes());
        plain.extend_from_slice(&3u32.to_be_bytes());
        plain.extend_from_slice(&1u64.to_be_bytes());
        plain.extend_from_slice(&2u64.to_be_bytes());
        plain.extend_from_slice(&1f64.to_be_bytes());
        plain.extend_from_slice(&[0; 16]);
        assert_eq!(plain.len(), 56);
        let err = decode_histogram("ttlb_us", &b64(&plain)).unwrap_err();
        assert!(
            err.to_string()
                .contains("claims 4294967295 payload bytes, 16 are present"),
            "{err}"
        );
        // Five digits over the widest range: a 49 MB counts array.
        plain[4..8].copy_from_slice(&16u32.to_be_bytes());
        plain[12..16].copy_from_slice(&5u32.to_be_bytes());
        plain[24..32].copy_from_slice(&(u64::MAX / 2).to_be_bytes());
        let err = decode_histogram("ttlb_us", &b64(&plain)).unwrap_err();
        assert!(err.to_string().contains("5 significant digits"), "{err}");
        // A compressed one claiming more compressed bytes than present.
        let mut packed = Vec::new();
        packed.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        packed.extend_from_slice(&u32::MAX.to_be_bytes());
        packed.extend_from_slice(&[0x78, 0x9c, 0, 0]);
        let err = decode_histogram("ttlb_us", &b64(&packed)).unwrap_err();
        assert!(err.to_string().contains("compressed bytes"), "{err}");
        // A deflate bomb: 64 MB of zeros packed small.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &vec![0u8; 64 << 20]).unwrap();
        let z = z.finish().unwrap();
        let mut bomb = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        bomb.extend_from_slice(&(z.len() as u32).to_be_bytes());
        bomb.extend_from_slice(&z);
        let err = decode_histogram("ttlb_us", &b64(&bomb)).unwrap_err();
        assert!(err.to_string().contains("inflates to more than"), "{err}");
    }

    #[test]
    fn the_cdf_copy_keeps_every_sample_within_one_percent_and_is_small() {
        // 1,000 samples spread over 2..50 ms.
        let values: Vec<u64> = (0..1000u64).map(|i| 2_000 + i * i * 48 / 1000).collect();
        let h = hist(&values);
        let copy = cdf_histogram(&h);
        assert_eq!(copy.len(), 1000);
        for q in [0.1, 0.5, 0.9, 0.99, 1.0] {
            let (a, b) = (h.value_at_quantile(q) as f64, copy.value_at_quantile(q) as f64);
            assert!((a - b).abs() / a < 0.01, "q{q}: {a} vs {b}");
        }
        let text = encode_cdf(&h).unwrap();
        assert!(text.len() < 1000, "{} bytes", text.len());
        assert!(encode_histogram(&h).len() > text.len());
        let back = decode_histogram("ttlb_us", &text).unwrap();
        let points = cdf_points(&back);
        assert!(points.len() > 100, "{} points", points.len());
        assert!(points.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert_eq!(points.last().unwrap().1, 1.0);
        assert!((points[0].0 - 2.0).abs() < 0.05, "{:?}", points[0]);
        assert_eq!(encode_cdf(&histogram_us()), None);
    }
}
