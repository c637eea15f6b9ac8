//! Engine API JWTs (HS256 over a 256-bit shared secret, `iat` claim): a token signed for each
//! call to an EL, and the check of a caller's token (within ±60 s, as the spec allows).
//!
//! Not here: where a token is read from a request and what a refusal looks like (the
//! gateway's `jwt::authenticate`).

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// A JWT secret that is not 32 bytes of hex.
#[derive(Debug, thiserror::Error)]
#[error("JWT secret: {0}")]
pub struct JwtError(pub String);

/// A 32-byte Engine API JWT secret.
#[derive(Clone)]
pub struct JwtSecret([u8; 32]);

impl std::fmt::Debug for JwtSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtSecret(..)")
    }
}

impl JwtSecret {
    /// Parses the hex form (with or without `0x`, surrounding blanks ignored), as in `jwt.hex`.
    pub fn from_hex(text: &str) -> Result<JwtSecret, JwtError> {
        let text = text.trim();
        let hex = text.strip_prefix("0x").unwrap_or(text);
        let mut secret = [0u8; 32];
        const_hex::decode_to_slice(hex, &mut secret)
            .map_err(|e| JwtError(format!("expected 64 hex digits ({} given): {e}", hex.len())))?;
        Ok(JwtSecret(secret))
    }

    /// A token with `iat` = `now` (seconds since the Unix epoch).
    pub fn token_at(&self, now: u64) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let claims = URL_SAFE_NO_PAD.encode(format!(r#"{{"iat":{now}}}"#));
        let signing_input = format!("{header}.{claims}");
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(signing_input.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{signing_input}.{signature}")
    }

    /// Checks a CL's token: HS256 signed with this secret, `iat` within ±60 s of `now`.
    pub fn verify_at(&self, token: &str, now: u64) -> Result<(), String> {
        let mut parts = token.split('.');
        let (Some(header), Some(claims), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("not a JWT (three dot-separated parts)".into());
        };
        let header: serde_json::Value = URL_SAFE_NO_PAD
            .decode(header)
            .ok()
            .and_then(|h| serde_json::from_slice(&h).ok())
            .ok_or("the JWT header is not base64url JSON")?;
        if header["alg"] != "HS256" {
            return Err(format!("algorithm {} is not HS256", header["alg"]));
        }
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| "the signature is not base64url")?;
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(&token.as_bytes()[..header_and_claims_len(token)]);
        mac.verify_slice(&signature)
            .map_err(|_| "the signature does not match the secret")?;
        let claims: serde_json::Value = URL_SAFE_NO_PAD
            .decode(claims)
            .ok()
            .and_then(|c| serde_json::from_slice(&c).ok())
            .ok_or("the JWT claims are not base64url JSON")?;
        let iat = claims["iat"].as_u64().ok_or("no iat claim")?;
        if iat.abs_diff(now) > 60 {
            return Err(format!("iat {iat} is more than 60 s from now ({now})"));
        }
        Ok(())
    }

    /// Checks a token against the current time.
    pub fn verify(&self, token: &str) -> Result<(), String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.verify_at(token, now)
    }

    /// A token for now.
    pub fn token(&self) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.token_at(now)
    }
}

/// The length of `header.claims` in a token (what the signature covers).
fn header_and_claims_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(token.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_matches_a_known_hs256_signature() {
        // The same header, claims and key signed independently (Python: hmac + base64).
        let secret = JwtSecret::from_hex(&"11".repeat(32)).unwrap();
        let token = secret.token_at(1_700_000_000);
        let parts: Vec<_> = token.split('.').collect();
        assert_eq!(parts[0], "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9");
        assert_eq!(parts[1], "eyJpYXQiOjE3MDAwMDAwMDB9");
        assert_eq!(parts[2], "Hb09lNHg9IiC1UttHzXRW1voUqjM97m4oEuKWkSux5g");
    }

    #[test]
    fn verification_refuses_what_it_should() {
        let secret = JwtSecret::from_hex(&"11".repeat(32)).unwrap();
        let other = JwtSecret::from_hex(&"22".repeat(32)).unwrap();
        let now = 1_700_000_000;
        assert!(secret.verify_at(&secret.token_at(now), now).is_ok());
        assert!(secret.verify_at(&secret.token_at(now - 59), now).is_ok());
        assert!(
            secret
                .verify_at(&secret.token_at(now - 61), now)
                .unwrap_err()
                .contains("more than 60 s")
        );
        assert!(
            secret
                .verify_at(&secret.token_at(now + 61), now)
                .unwrap_err()
                .contains("more than 60 s")
        );
        assert!(
            secret
                .verify_at(&other.token_at(now), now)
                .unwrap_err()
                .contains("signature")
        );
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
            URL_SAFE_NO_PAD.encode(br#"{"iat":1700000000}"#)
        );
        assert!(
            secret
                .verify_at(&none, now)
                .unwrap_err()
                .contains("not HS256")
        );
        assert!(secret.verify_at("garbage", now).is_err());
    }

    #[test]
    fn bad_secrets_are_refused() {
        assert!(JwtSecret::from_hex("0x1234").is_err());
        assert!(JwtSecret::from_hex(&"zz".repeat(32)).is_err());
        assert!(JwtSecret::from_hex(&format!("0x{}\n", "ab".repeat(32))).is_ok());
    }
}
