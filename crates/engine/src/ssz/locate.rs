//! The field path of a byte of an SSZ value: which field (`payload.transactions[3]`, or the
//! offset slot of one, `payload.transactions (offset)`) a given byte offset falls in.
//!
//! For evidence (the first byte where two encodings differ, named by its field). Only for
//! bytes that [`super::validate`] accepted against the same type; a byte past the value names
//! the container itself. Not here: finding faults (the validator's walk does that).

use super::{schema::Ty, validate::container_fields};

/// The field path of byte `offset` of `bytes`, a valid SSZ value of `ty` (`.` for the value
/// itself or a byte outside it).
pub fn path_at(ty: &Ty, bytes: &[u8], offset: usize) -> String {
    let mut path = String::new();
    locate(ty, bytes, offset, &mut path);
    if path.is_empty() { ".".into() } else { path }
}

fn locate(ty: &Ty, bytes: &[u8], offset: usize, path: &mut String) {
    if offset >= bytes.len() {
        return;
    }
    match ty {
        Ty::Container(_, fields) => {
            let slices = container_fields(ty, bytes);
            let mut slot = 0;
            for (field, slice) in fields.iter().zip(slices) {
                let width = field.ty.fixed_size().unwrap_or(4);
                let start = slice.as_ptr() as usize - bytes.as_ptr() as usize;
                let name = |path: &mut String| {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(field.name);
                };
                if offset >= slot && offset < slot + width {
                    name(path);
                    if field.ty.fixed_size().is_none() {
                        path.push_str(" (offset)");
                    } else {
                        locate(field.ty, slice, offset - slot, path);
                    }
                    return;
                }
                if field.ty.fixed_size().is_none()
                    && offset >= start
                    && offset < start + slice.len()
                {
                    name(path);
                    locate(field.ty, slice, offset - start, path);
                    return;
                }
                slot += width;
            }
        }
        Ty::List(elem, _) => locate_in_list(elem, bytes, offset, path),
        Ty::Fixed(_) | Ty::Bool | Ty::Tag(_) | Ty::Bytes(_) => {}
    }
}

fn locate_in_list(elem: &Ty, bytes: &[u8], offset: usize, path: &mut String) {
    if let Some(size) = elem.fixed_size() {
        let i = offset / size.max(1);
        path.push_str(&format!("[{i}]"));
        locate(
            elem,
            &bytes[i * size..(i + 1) * size],
            offset - i * size,
            path,
        );
        return;
    }
    let read = |at: usize| {
        bytes.get(at..at + 4).map_or(bytes.len(), |b| {
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
        })
    };
    let count = read(0) / 4;
    if offset < count * 4 {
        path.push_str(&format!("[{}] (offset)", offset / 4));
        return;
    }
    for i in 0..count {
        let (start, end) = (
            read(i * 4),
            if i + 1 < count {
                read((i + 1) * 4)
            } else {
                bytes.len()
            },
        );
        if offset >= start && offset < end && end <= bytes.len() {
            path.push_str(&format!("[{i}]"));
            locate(elem, &bytes[start..end], offset - start, path);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssz::schema::{FORKCHOICE_RESPONSE, PAYLOAD_STATUS};

    #[test]
    fn bytes_are_named_by_their_field() {
        // status, offset of latest_valid_hash, offset of validation_error, the hash.
        let mut status = vec![0u8];
        status.extend_from_slice(&9u32.to_le_bytes());
        status.extend_from_slice(&41u32.to_le_bytes());
        status.extend_from_slice(&[0xab; 32]);
        crate::ssz::validate(&PAYLOAD_STATUS, &status).unwrap();
        assert_eq!(path_at(&PAYLOAD_STATUS, &status, 0), "status");
        assert_eq!(
            path_at(&PAYLOAD_STATUS, &status, 2),
            "latest_valid_hash (offset)"
        );
        assert_eq!(
            path_at(&PAYLOAD_STATUS, &status, 6),
            "validation_error (offset)"
        );
        assert_eq!(
            path_at(&PAYLOAD_STATUS, &status, 20),
            "latest_valid_hash[0]"
        );
        assert_eq!(path_at(&PAYLOAD_STATUS, &status, 99), ".");
        let mut fcu = vec![8u8, 0, 0, 0, 49, 0, 0, 0];
        fcu.extend_from_slice(&status);
        fcu.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        crate::ssz::validate(&FORKCHOICE_RESPONSE, &fcu).unwrap();
        assert_eq!(
            path_at(&FORKCHOICE_RESPONSE, &fcu, 8 + 20),
            "payload_status.latest_valid_hash[0]"
        );
        assert_eq!(path_at(&FORKCHOICE_RESPONSE, &fcu, 52), "payload_id[0]");
    }
}
