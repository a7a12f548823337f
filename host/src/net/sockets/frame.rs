//! The framings a read of one whole message knows (`tcp-socket.read-frame`,
//! contract 0.3.9): RESP ([`super::resp::frame_len`]) and a big-endian length field
//! in the message's header (PostgreSQL's messages, many binary protocols).

/// What a framer found at the start of the buffered bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame {
    /// The first message is the first `n` bytes.
    Whole(usize),
    /// The first message is not all there: it is at least `n` bytes long (more than
    /// are held), so a read bounded below `n` can fail at once.
    AtLeast(usize),
}

/// A framer: where the first message of the buffered bytes ends, or what is wrong
/// with them (they are not the protocol's).
pub(crate) type Framed = Result<Frame, String>;

/// A length field: `size` bytes at `offset`, big-endian; the message is `value +
/// adjust` bytes long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LengthField {
    /// Where the field starts in the message.
    pub offset: u32,
    /// Its width in bytes: 1, 2, 4 or 8.
    pub size: u8,
    /// Added to the value for the message's whole length.
    pub adjust: i64,
}

impl LengthField {
    /// A field the contract describes, refused (what to fix) when its width is not
    /// one of 1, 2, 4 or 8.
    pub(crate) fn new(offset: u32, size: u8, adjust: i64) -> Result<Self, String> {
        if !matches!(size, 1 | 2 | 4 | 8) {
            return Err(format!(
                "a length field of {size} bytes: it is 1, 2, 4 or 8 bytes wide"
            ));
        }
        Ok(Self {
            offset,
            size,
            adjust,
        })
    }

    /// Where the first message in `buf` ends, as `TcpConn::read_frame` asks.
    pub(crate) fn frame_len(&self, buf: &[u8]) -> Framed {
        let start = self.offset as usize;
        let end = start + usize::from(self.size);
        let Some(field) = buf.get(start..end) else {
            return Ok(Frame::AtLeast(end));
        };
        let value = field.iter().fold(0u128, |v, b| v << 8 | u128::from(*b));
        let len = value as i128 + i128::from(self.adjust);
        if len < end as i128 {
            return Err(format!(
                "a length field of {value} makes a message of {len} bytes, shorter than its own header ({end})"
            ));
        }
        // Past usize, the read's bound refuses it: report it as that long.
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        Ok(if buf.len() >= len {
            Frame::Whole(len)
        } else {
            Frame::AtLeast(len)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_message_is_its_type_byte_and_its_length() {
        // 'Z', length 5 (itself and one byte), 'I'; then the next message.
        let pg = LengthField::new(1, 4, 1).unwrap();
        assert_eq!(pg.frame_len(b"Z\0\0\0\x05I1"), Ok(Frame::Whole(6)));
        assert_eq!(pg.frame_len(b"Z\0\0\0\x05"), Ok(Frame::AtLeast(6)));
        assert_eq!(pg.frame_len(b"Z\0\0"), Ok(Frame::AtLeast(5)));
        assert!(pg
            .frame_len(b"Z\0\0\0\x01")
            .unwrap_err()
            .contains("shorter"));
    }

    #[test]
    fn widths_other_than_1_2_4_8_are_refused() {
        assert!(LengthField::new(0, 3, 0)
            .unwrap_err()
            .contains("1, 2, 4 or 8"));
        let huge = LengthField::new(0, 8, 0).unwrap();
        assert_eq!(huge.frame_len(&[0xff; 9]), Ok(Frame::AtLeast(usize::MAX)));
    }
}
