//! Authentication of a caller's Engine API call: the one place a `Authorization: Bearer` JWT
//! is read from a request and checked, for `--auth verify` and both bridge directions. With
//! `--auth passthrough` the relay passes the CL's token on and the EL decides.
//!
//! Not here: signing and verifying tokens (`sszgate_client::jwt`).

use sszgate_client::JwtSecret;

/// Why a caller's call was not authenticated.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Denied {
    /// The gateway has no secret to verify with (each caller says what that means for it).
    NoSecret,
    /// The token is missing or not valid: why.
    Refused(String),
}

/// The one check of a caller's JWT, for `--auth verify` and for both bridge directions: the
/// `Authorization: Bearer` token of `headers`, verified with `secret` (HS256, `iat` within
/// ±60 s). The secret comes back for signing the gateway's own upstream token.
pub(crate) fn authenticate<'s>(
    secret: Option<&'s JwtSecret>,
    headers: &http::HeaderMap,
) -> Result<&'s JwtSecret, Denied> {
    let secret = secret.ok_or(Denied::NoSecret)?;
    let token = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| Denied::Refused("no bearer token".into()))?;
    secret.verify(token).map_err(Denied::Refused)?;
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authentication_reads_the_bearer_token() {
        let secret = JwtSecret::from_hex(&"11".repeat(32)).unwrap();
        let mut headers = http::HeaderMap::new();
        assert_eq!(authenticate(None, &headers).unwrap_err(), Denied::NoSecret);
        assert_eq!(
            authenticate(Some(&secret), &headers).unwrap_err(),
            Denied::Refused("no bearer token".into())
        );
        let bearer = format!("Bearer {}", secret.token());
        headers.insert(http::header::AUTHORIZATION, bearer.parse().unwrap());
        assert!(authenticate(Some(&secret), &headers).is_ok());
        headers.insert(http::header::AUTHORIZATION, "Bearer x.y.z".parse().unwrap());
        assert!(matches!(
            authenticate(Some(&secret), &headers),
            Err(Denied::Refused(_))
        ));
    }
}
