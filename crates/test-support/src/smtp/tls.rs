//! A self-signed certificate for STARTTLS on loopback, made fresh for each server.

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::PKey;
use openssl::x509::extension::{BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName};
use openssl::x509::{X509, X509NameBuilder};

/// A TLS acceptor with a new self-signed certificate for `localhost` and `127.0.0.1`, and that
/// certificate as PEM.
pub(super) fn acceptor() -> (tokio_native_tls::TlsAcceptor, String) {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).expect("curve");
    let key = PKey::from_ec_key(EcKey::generate(&group).expect("key")).expect("pkey");
    let serial = rand_serial();
    // A name of its own: OpenSSL finds an issuer by name, so two test servers' certificates
    // trusted together must not share one.
    let mut name = X509NameBuilder::new().expect("name");
    name.append_entry_by_text("CN", &format!("driftwatch test server {serial:08x}")).expect("CN");
    let name = name.build();
    let mut cert = X509::builder().expect("builder");
    cert.set_version(2).expect("version");
    let serial = BigNum::from_u32(serial).and_then(|n| n.to_asn1_integer()).expect("serial");
    cert.set_serial_number(&serial).expect("serial");
    cert.set_subject_name(&name).expect("subject");
    cert.set_issuer_name(&name).expect("issuer");
    cert.set_pubkey(&key).expect("pubkey");
    cert.set_not_before(&Asn1Time::days_from_now(0).expect("time")).expect("not before");
    cert.set_not_after(&Asn1Time::days_from_now(2).expect("time")).expect("not after");
    cert.append_extension(BasicConstraints::new().critical().ca().build().expect("bc")).expect("bc");
    let usage = KeyUsage::new().critical().digital_signature().key_cert_sign().build().expect("ku");
    cert.append_extension(usage).expect("ku");
    cert.append_extension(ExtendedKeyUsage::new().server_auth().build().expect("eku")).expect("eku");
    let san = SubjectAlternativeName::new()
        .dns("localhost")
        .ip("127.0.0.1")
        .build(&cert.x509v3_context(None, None))
        .expect("san");
    cert.append_extension(san).expect("san");
    cert.sign(&key, MessageDigest::sha256()).expect("sign");
    let cert_pem = cert.build().to_pem().expect("pem");
    let key_pem = key.private_key_to_pem_pkcs8().expect("key pem");
    let identity = native_tls::Identity::from_pkcs8(&cert_pem, &key_pem).expect("identity");
    let acceptor = native_tls::TlsAcceptor::new(identity).expect("acceptor");
    (acceptor.into(), String::from_utf8(cert_pem).expect("PEM is ASCII"))
}

/// A serial number that differs between servers.
fn rand_serial() -> u32 {
    let mut bytes = [0u8; 4];
    openssl::rand::rand_bytes(&mut bytes).expect("random");
    u32::from_be_bytes(bytes) >> 1
}
