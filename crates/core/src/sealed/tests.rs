//! Sealing, opening and rotating.

use super::*;

fn keyring() -> Keyring {
    Keyring::new(SecretKey::generate(), Vec::new())
}

#[test]
fn seals_and_opens_round_trip() {
    let ring = keyring();
    for plaintext in ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "", "päss wörd ✓", &"x".repeat(10_000)] {
        let sealed = ring.seal(plaintext);
        assert!(is_sealed(&sealed));
        assert!(sealed.starts_with(&format!("dwenc:v1:{}:", ring.current_id())), "{sealed}");
        assert!(!sealed.contains(plaintext) || plaintext.is_empty());
        assert_eq!(ring.open(&sealed).as_deref(), Ok(plaintext));
    }
    let (a, b) = (ring.seal("same"), ring.seal("same"));
    assert_ne!(a, b, "a fresh nonce each time");
    let body = a.rsplit(':').next().unwrap_or_default();
    assert_eq!(URL_SAFE_NO_PAD.decode(body).map(|b| b.len()).ok(), Some(NONCE_LEN + 4 + TAG_LEN));
}

#[test]
fn another_key_fails() {
    let sealed = keyring().seal("secret");
    let other = keyring();
    let err = other.open(&sealed).expect_err("another key");
    assert!(matches!(err, SealError::UnknownKey { .. }), "{err}");
    // The same id over another key (forged): the tag does not verify.
    let forged = sealed.replacen(&sealed[9..17], other.current_id(), 1);
    assert!(matches!(other.open(&forged), Err(SealError::Tampered { .. })));
}

#[test]
fn tampering_is_detected() {
    let ring = keyring();
    let sealed = ring.seal("secret value");
    let (header, body) = sealed.rsplit_once(':').unwrap_or_default();
    let mut bytes = URL_SAFE_NO_PAD.decode(body).unwrap_or_default();
    for i in [0, NONCE_LEN, bytes.len() - 1] {
        bytes[i] ^= 1;
        let altered = format!("{header}:{}", URL_SAFE_NO_PAD.encode(&bytes));
        let err = ring.open(&altered).expect_err("altered");
        assert_eq!(err, SealError::Tampered { key_id: ring.current_id().to_owned() });
        assert!(!err.to_string().contains("secret value"));
        bytes[i] ^= 1;
    }
    assert!(matches!(ring.open(&format!("{header}:AAAA")), Err(SealError::Malformed(_))));
    assert!(matches!(ring.open(&format!("{header}:not base64!")), Err(SealError::Malformed(_))));
    assert!(matches!(ring.open("dwenc:v2:0123abcd:AAAA"), Err(SealError::Malformed(_))));
    assert!(matches!(ring.open("dwenc:v1:nothex!!:AAAA"), Err(SealError::Malformed(_))));
    assert!(matches!(ring.open("dwenc:v1:"), Err(SealError::Malformed(_))));
}

#[test]
fn the_header_is_authenticated() {
    let key = SecretKey::generate();
    let sealed = Keyring::new(key.clone(), Vec::new()).seal("secret");
    let (header, body) = sealed.rsplit_once(':').unwrap_or_default();
    let bytes = URL_SAFE_NO_PAD.decode(body).unwrap_or_default();
    let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
    let nonce = XNonce::try_from(nonce).expect("24 bytes");
    let open = |aad: &str| key.cipher().decrypt(&nonce, Payload { msg: ciphertext, aad: aad.as_bytes() });
    assert_eq!(header, format!("dwenc:v1:{}", key.id()));
    assert_eq!(open(header).ok().as_deref(), Some(&b"secret"[..]));
    assert!(open("").is_err(), "without the header");
    assert!(open(&format!("dwenc:v2:{}", key.id())).is_err(), "under another version");
}

#[test]
fn previous_keys_still_open() {
    let old = SecretKey::generate();
    let sealed = Keyring::new(old.clone(), Vec::new()).seal("rotated");
    let ring = Keyring::new(SecretKey::generate(), vec![SecretKey::generate(), old.clone()]);
    assert_eq!(ring.open(&sealed).as_deref(), Ok("rotated"));
    assert!(ring.needs_reseal(&sealed));
    let resealed = ring.reseal(&sealed).ok().flatten().unwrap_or_default();
    assert!(resealed.starts_with(&format!("dwenc:v1:{}:", ring.current_id())));
    assert_eq!(ring.open(&resealed).as_deref(), Ok("rotated"));
    assert_eq!(ring.reseal(&resealed), Ok(None));
    assert_eq!(ring.previous_ids().collect::<Vec<_>>(), vec![ring.previous[0].id.as_str(), old.id.as_str()]);
}

#[test]
fn an_unknown_key_is_named_and_the_value_is_not() {
    let old = SecretKey::generate();
    let sealed = Keyring::new(old.clone(), Vec::new()).seal("hunter2-very-secret");
    let err = keyring().open(&sealed).expect_err("unknown key");
    let message = err.to_string();
    assert_eq!(message, format!("sealed with key {}, which is not configured", old.id()));
    assert!(!message.contains("hunter2") && !message.contains(sealed.rsplit(':').next().unwrap_or("-")));
    assert!(!message.contains(&old.to_base64()));
}

#[test]
fn plaintext_passes_through() {
    let ring = keyring();
    for plain in ["whsec_abc", "", "dwenc", "DWENC:v1:00000000:AAAA", "token:with:colons"] {
        assert!(!is_sealed(plain));
        assert_eq!(ring.open(plain).as_deref(), Ok(plain));
    }
}

#[test]
fn needs_reseal_is_plaintext_or_another_key() {
    let old = SecretKey::generate();
    let ring = Keyring::new(SecretKey::generate(), vec![old.clone()]);
    assert!(ring.needs_reseal("whsec_plain"));
    assert!(ring.needs_reseal(""));
    assert!(!ring.needs_reseal(&ring.seal("x")));
    assert!(ring.needs_reseal(&Keyring::new(old, Vec::new()).seal("x")));
    assert!(ring.needs_reseal(&keyring().seal("x")), "an unknown key: resealing reports it");
    assert!(ring.needs_reseal("dwenc:v9:junk"));
    assert!(matches!(ring.reseal(&keyring().seal("x")), Err(SealError::UnknownKey { .. })));
    let resealed = ring.reseal("whsec_plain").ok().flatten().unwrap_or_default();
    assert_eq!(ring.open(&resealed).as_deref(), Ok("whsec_plain"));
}

#[test]
fn keys_read_back_and_have_stable_ids() {
    let key = SecretKey::generate();
    let encoded = key.to_base64();
    assert_eq!(encoded.len(), 44);
    let again = SecretKey::from_base64(&format!("  {encoded}\n")).expect("valid");
    assert_eq!(again.to_base64(), encoded);
    assert_eq!(again.id(), key.id());
    assert_eq!(key.id().len(), 8);
    assert_ne!(SecretKey::generate().id(), key.id());
    // SHA-256 of 32 zero bytes starts 66687aad.
    let zero = SecretKey::from_base64(&STANDARD.encode([0u8; 32])).expect("valid");
    assert_eq!(zero.id(), "66687aad");
    let debug = format!("{key:?} {:?}", Keyring::new(key.clone(), vec![zero]));
    assert!(debug.contains(&key.id()) && !debug.contains(&encoded) && !debug.contains("bytes"), "{debug}");
}

#[test]
fn bad_keys_are_refused_clearly() {
    let short = STANDARD.encode([7u8; 16]);
    let err = SecretKey::from_base64(&short).expect_err("16 bytes");
    assert!(matches!(err, KeyError::WrongLength(16)));
    assert!(err.to_string().contains("16 bytes") && err.to_string().contains("exactly 32"), "{err}");
    assert!(!err.to_string().contains(&short));
    assert!(matches!(SecretKey::from_base64(&STANDARD.encode([7u8; 33])), Err(KeyError::WrongLength(33))));
    assert!(matches!(SecretKey::from_base64(" \n"), Err(KeyError::Empty)));
    let url_safe = URL_SAFE_NO_PAD.encode([0xfbu8; 32]);
    let err = SecretKey::from_base64(&url_safe).expect_err("URL-safe alphabet");
    assert!(matches!(err, KeyError::NotBase64(_)), "{err}");
    assert!(err.to_string().contains("offset 0") && !err.to_string().contains(&url_safe[..8]), "{err}");
    let err = SecretKey::from_base64("not base64 at all!").expect_err("garbage");
    assert!(err.to_string().starts_with("the secret key is not valid standard base64"), "{err}");
    assert!(!err.to_string().contains("not base64 at all"), "{err}");
}

#[test]
fn sealed_values_are_found_inside_json() {
    let keyring = Keyring::new(SecretKey::generate(), Vec::new());
    let (a, b) = (keyring.seal("http://u:p@proxy:1"), keyring.seal("socks5://x"));
    let json = format!(r#"{{"fetch":{{"proxy":"{a}"}},"when_blocked":{{"proxy":"{b}"}},"note":"dwenc is a word"}}"#);
    let found: Vec<(usize, &str)> = sealed_within(&json).collect();
    assert_eq!(found.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [a.as_str(), b.as_str()]);
    assert_eq!(&json[found[0].0..found[0].0 + a.len()], a);
    assert_eq!(keyring.open(found[1].1).expect("opens"), "socks5://x");
}
