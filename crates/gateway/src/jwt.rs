//! Engine API JWTs (HS256 over a 256-bit shared secret, `iat` claim), to call the EL on the
//! gateway's own behalf (asking its client version). Verifying the CL's tokens is not done
//! here: the relay passes them through and the EL decides.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::Error;

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
    pub fn from_hex(text: &str) -> Result<JwtSecret, Error> {
        let text = text.trim();
        let hex = text.strip_prefix("0x").unwrap_or(text);
        let mut secret = [0u8; 32];
        const_hex::decode_to_slice(hex, &mut secret).map_err(|e| {
            Error::Jwt(format!("expected 64 hex digits ({} given): {e}", hex.len()))
        })?;
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

    /// A token for now.
    pub fn token(&self) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.token_at(now)
    }
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
    fn bad_secrets_are_refused() {
        assert!(JwtSecret::from_hex("0x1234").is_err());
        assert!(JwtSecret::from_hex(&"zz".repeat(32)).is_err());
        assert!(JwtSecret::from_hex(&format!("0x{}\n", "ab".repeat(32))).is_ok());
    }
}
