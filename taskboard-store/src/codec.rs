//! Encoding of keys and values.
//!
//! Every stored value starts with a format version byte, so a later format
//! can be read side by side with this one and migrated lazily.

use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use taskboard_wire::error::Error;

/// Version of the record format written by this build.
pub const FORMAT_VERSION: u8 = 1;

/// Encodes a record: version byte, then JSON.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.push(FORMAT_VERSION);
    serde_json::to_writer(&mut out, value).expect("records serialise");
    out
}

/// Decodes a record written by [`encode`].
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    match bytes.split_first() {
        Some((&FORMAT_VERSION, body)) => {
            serde_json::from_slice(body).map_err(|e| Error::internal(format!("undecodable record: {e}")))
        }
        Some((v, _)) => Err(Error::internal(format!("unknown record format version {v}"))),
        None => Err(Error::internal("empty record")),
    }
}

/// Builder of composite keys whose byte order is the order of the fields.
#[derive(Debug, Default, Clone)]
pub struct Key(Vec<u8>);

impl Key {
    pub fn new() -> Key {
        Key(Vec::with_capacity(48))
    }
    pub fn uuid(mut self, id: Uuid) -> Key {
        self.0.extend_from_slice(id.as_bytes());
        self
    }
    pub fn u64(mut self, n: u64) -> Key {
        self.0.extend_from_slice(&n.to_be_bytes());
        self
    }
    pub fn u8(mut self, n: u8) -> Key {
        self.0.push(n);
        self
    }
    /// An f64 in an order-preserving form: flip the sign bit of
    /// positives, all bits of negatives.
    pub fn f64(mut self, x: f64) -> Key {
        let bits = x.to_bits();
        let ordered = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
        self.0.extend_from_slice(&ordered.to_be_bytes());
        self
    }
    /// Raw bytes of a fixed length.
    pub fn bytes(mut self, b: &[u8]) -> Key {
        self.0.extend_from_slice(b);
        self
    }
    /// A string that ends the key.
    pub fn str(mut self, s: &str) -> Key {
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    /// A string followed by more fields: terminated by a 0 byte.
    pub fn str0(mut self, s: &str) -> Key {
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
        self
    }
    pub fn build(self) -> Vec<u8> {
        self.0
    }
}

impl std::ops::Deref for Key {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// Reads the uuid at `offset` of a key.
pub fn uuid_at(key: &[u8], offset: usize) -> Result<Uuid, Error> {
    key.get(offset..offset + 16)
        .and_then(|b| Uuid::from_slice(b).ok())
        .ok_or_else(|| Error::internal("malformed key"))
}

/// Reads an f64 written by [`Key::f64`] at `offset` of a key.
pub fn f64_at(key: &[u8], offset: usize) -> Result<f64, Error> {
    let bytes: [u8; 8] = key
        .get(offset..offset + 8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| Error::internal("malformed key"))?;
    let ordered = u64::from_be_bytes(bytes);
    let bits = if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered };
    Ok(f64::from_bits(bits))
}

/// Reads the uuid that ends a key.
pub fn uuid_suffix(key: &[u8]) -> Result<Uuid, Error> {
    if key.len() < 16 {
        return Err(Error::internal("malformed key"));
    }
    uuid_at(key, key.len() - 16)
}

/// Reads a uuid stored as a value.
pub fn uuid_value(value: &[u8]) -> Result<Uuid, Error> {
    Uuid::from_slice(value).map_err(|_| Error::internal("malformed uuid value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f64_keys_sort_like_numbers() {
        let xs = [-1e9, -2.5, -0.0, 0.0, 1.0, 1.5, 2.0, 1e12];
        let keys: Vec<Vec<u8>> = xs.iter().map(|&x| Key::new().f64(x).build()).collect();
        for w in keys.windows(2) {
            assert!(w[0] <= w[1]);
        }
        for (&x, k) in xs.iter().zip(&keys) {
            assert_eq!(f64_at(k, 0).unwrap().to_bits(), x.to_bits());
        }
    }

    #[test]
    fn records_carry_a_version() {
        let bytes = encode(&vec![1, 2]);
        assert_eq!(bytes[0], FORMAT_VERSION);
        assert_eq!(decode::<Vec<i32>>(&bytes).unwrap(), vec![1, 2]);
        assert!(decode::<Vec<i32>>(&[9, b'[', b']']).is_err());
    }
}
