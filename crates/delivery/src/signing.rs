//! Standard Webhooks signatures (<https://www.standardwebhooks.com/>).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Why a signature did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The secret is not `whsec_` + base64 (or bare base64).
    #[error("the secret is not valid base64")]
    BadSecret,
    /// The timestamp is not a number.
    #[error("the webhook-timestamp header is not a unix timestamp")]
    BadTimestamp,
    /// The timestamp is too far from now (replay protection).
    #[error("the webhook-timestamp is outside the tolerance")]
    TimestampOutOfTolerance,
    /// No `v1,` signature matched.
    #[error("no signature matches")]
    NoMatch,
}

fn key(secret: &str) -> Result<Vec<u8>, VerifyError> {
    let encoded = secret.strip_prefix(driftwatch_core::WEBHOOK_SECRET_PREFIX).unwrap_or(secret);
    STANDARD.decode(encoded).map_err(|_| VerifyError::BadSecret)
}

fn mac(key: &[u8], msg_id: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The `webhook-signature` value for one secret: `v1,<base64 HMAC-SHA256(key, "{id}.{ts}.{body}")>`.
pub fn sign(secret: &str, msg_id: &str, timestamp: i64, body: &[u8]) -> Result<String, VerifyError> {
    let key = key(secret)?;
    Ok(format!("v1,{}", STANDARD.encode(mac(&key, msg_id, timestamp, body).finalize().into_bytes())))
}

/// Verifies a webhook as a receiver would: the timestamp within `tolerance_secs` of `now`, and
/// any space-separated `v1,` signature in `signatures` matching `secret` (compared in constant
/// time).
pub fn verify(
    secret: &str,
    msg_id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now: i64,
    tolerance_secs: i64,
) -> Result<(), VerifyError> {
    let ts: i64 = timestamp.trim().parse().map_err(|_| VerifyError::BadTimestamp)?;
    if now.abs_diff(ts) > tolerance_secs.unsigned_abs() {
        return Err(VerifyError::TimestampOutOfTolerance);
    }
    let key = key(secret)?;
    for candidate in signatures.split_whitespace() {
        let Some(encoded) = candidate.strip_prefix("v1,") else {
            continue;
        };
        let Ok(expected) = STANDARD.decode(encoded) else {
            continue;
        };
        if mac(&key, msg_id, ts, body).verify_slice(&expected).is_ok() {
            return Ok(());
        }
    }
    Err(VerifyError::NoMatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The example from the Standard Webhooks specification's reference libraries.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const EXPECTED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn signs_like_the_reference_implementation() {
        assert_eq!(sign(SECRET, ID, TS, BODY).as_deref(), Ok(EXPECTED));
    }

    #[test]
    fn verifies_any_of_several_signatures_within_tolerance() {
        let both = format!("v1,bm90IGl0 {EXPECTED}");
        assert_eq!(verify(SECRET, ID, &TS.to_string(), &both, BODY, TS + 10, 300), Ok(()));
        assert_eq!(verify(SECRET, ID, &TS.to_string(), EXPECTED, b"tampered", TS, 300), Err(VerifyError::NoMatch));
        assert_eq!(
            verify(SECRET, ID, &TS.to_string(), EXPECTED, BODY, TS + 301, 300),
            Err(VerifyError::TimestampOutOfTolerance)
        );
        assert_eq!(verify(SECRET, ID, "soon", EXPECTED, BODY, TS, 300), Err(VerifyError::BadTimestamp));
        let hostile = i64::MIN.to_string();
        assert_eq!(verify(SECRET, ID, &hostile, EXPECTED, BODY, TS, 300), Err(VerifyError::TimestampOutOfTolerance));
        assert_eq!(verify("whsec_!!", ID, &TS.to_string(), EXPECTED, BODY, TS, 300), Err(VerifyError::BadSecret));
    }
}
