//! The spool: rows waiting for a remote sink, kept on local disk so that nothing is lost while
//! the remote side is slow or down, and read back in order.
//!
//! Layout of a spool directory:
//! - `id`: the spool's id (a UUID made when the directory is), part of every row's key;
//! - `NNNNNNNNNNNNNNNNNNNN.jsonl`: append-only segments of one row per line, named by the
//!   sequence number of their first row, so a row's number is its segment's plus its line;
//! - `cursor`: where the next unsent row is (`SEGMENT OFFSET SEQ`), replaced atomically after
//!   each batch the remote side took.
//!
//! One writer (the recorder's thread) and one reader (a shipper) share a spool. The writer
//! appends whole lines and syncs them; the reader reads whole lines only, so a line being
//! written is never read half. A segment is complete once a newer one exists. The writer
//! refuses rows (and counts them) when the spool would grow past its size limit: the newest
//! rows are the ones given up, the ones already waiting keep their order.
//!
//! Not here: what the rows mean or where they go (`clickhouse`).

use std::{
    fs::{File, OpenOptions},
    io::{Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

/// Segment size at which the writer starts a new one.
pub const SEGMENT_BYTES: u64 = 16 << 20;

/// Where the next unsent row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// The first sequence number of the segment (its name).
    pub segment: u64,
    /// Byte offset in the segment.
    pub offset: u64,
    /// The sequence number of the row at that offset.
    pub seq: u64,
}

/// Rows read from the spool, in order.
#[derive(Debug)]
pub struct Batch {
    /// The rows, one per line, each ending in `\n`.
    pub data: Vec<u8>,
    /// The sequence number of the first row.
    pub first_seq: u64,
    /// How many rows.
    pub count: u64,
    /// The cursor after the last row (commit it once the rows are taken).
    pub end: Cursor,
}

impl Batch {
    /// The sequence number of the last row.
    pub fn last_seq(&self) -> u64 {
        self.first_seq + self.count - 1
    }

    /// The rows with their sequence numbers (each row without its `\n`).
    pub fn rows(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.data
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .zip(self.first_seq..)
            .map(|(line, seq)| (seq, line))
    }
}

/// Figures of a spool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SpoolStats {
    /// Bytes on disk (every segment).
    pub bytes: u64,
    /// Rows written and not yet taken by the remote side.
    pub waiting: u64,
    /// Rows refused because the spool was full.
    pub dropped: u64,
}

struct State {
    /// Segments, ascending: (first sequence number, bytes).
    segments: Vec<(u64, u64)>,
    active: File,
    next_seq: u64,
    cursor: Cursor,
}

/// A spool directory, open for one writer and one reader.
pub struct Spool {
    dir: PathBuf,
    id: String,
    max_bytes: u64,
    segment_bytes: u64,
    state: Mutex<State>,
    bytes: AtomicU64,
    dropped: AtomicU64,
}

fn io_err(path: &Path, e: std::io::Error) -> crate::Error {
    crate::Error::Io {
        path: path.display().to_string(),
        source: e,
    }
}

impl Spool {
    /// Opens (or creates) the spool in `dir`, holding at most `max_bytes` on disk.
    pub fn open(dir: &Path, max_bytes: u64) -> crate::Result<Spool> {
        Spool::open_with_segments(dir, max_bytes, SEGMENT_BYTES)
    }

    /// As [`Spool::open`], with segments of `segment_bytes` (small ones for tests).
    pub fn open_with_segments(
        dir: &Path,
        max_bytes: u64,
        segment_bytes: u64,
    ) -> crate::Result<Spool> {
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        let id_path = dir.join("id");
        let id = match std::fs::read_to_string(&id_path) {
            // The id goes into the remote side's queries: letters, digits and '-' only.
            Ok(id) if !id.trim().is_empty() => {
                let id = id.trim();
                if !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                    return Err(io_err(
                        &id_path,
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!("not a spool id: {id:?} (letters, digits and '-' only)"),
                        ),
                    ));
                }
                id.to_string()
            }
            _ => {
                let id = uuid::Uuid::new_v4().simple().to_string();
                write_atomically(&id_path, id.as_bytes())?;
                id
            }
        };
        let mut segments: Vec<(u64, u64)> = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| io_err(dir, e))? {
            let entry = entry.map_err(|e| io_err(dir, e))?;
            let name = entry.file_name();
            let Some(first) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            let len = entry.metadata().map_err(|e| io_err(dir, e))?.len();
            segments.push((first, len));
        }
        segments.sort_unstable();
        let cursor_path = dir.join("cursor");
        let saved = std::fs::read_to_string(&cursor_path).ok().and_then(|s| {
            let mut it = s.split_whitespace().map(|v| v.parse::<u64>().ok());
            Some(Cursor {
                segment: it.next()??,
                offset: it.next()??,
                seq: it.next()??,
            })
        });
        if segments.is_empty() {
            let first = saved.map_or(1, |c| c.seq);
            let path = segment_path(dir, first);
            File::create(&path).map_err(|e| io_err(&path, e))?;
            segments.push((first, 0));
        }
        // The last segment may end in a half-written line (a crash while writing): cut it,
        // and count its lines to know the next sequence number.
        let (last_first, last_len) = *segments.last().expect("one segment at least");
        let last_path = segment_path(dir, last_first);
        let mut content = Vec::new();
        File::open(&last_path)
            .and_then(|mut f| f.read_to_end(&mut content))
            .map_err(|e| io_err(&last_path, e))?;
        let whole = content
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let active = OpenOptions::new()
            .append(true)
            .open(&last_path)
            .map_err(|e| io_err(&last_path, e))?;
        if (whole as u64) < last_len {
            tracing::warn!(segment = %last_path.display(), bytes = last_len - whole as u64, "a half-written row at the end of the spool was cut");
            active
                .set_len(whole as u64)
                .map_err(|e| io_err(&last_path, e))?;
            segments.last_mut().expect("one segment").1 = whole as u64;
        }
        let next_seq = last_first + memchr::memchr_iter(b'\n', &content[..whole]).count() as u64;
        let first = segments[0];
        let cursor = match saved {
            Some(c) if segments.iter().any(|(s, _)| *s == c.segment) => c,
            _ => Cursor {
                segment: first.0,
                offset: 0,
                seq: first.0,
            },
        };
        let bytes = segments.iter().map(|(_, len)| len).sum();
        Ok(Spool {
            dir: dir.to_path_buf(),
            id,
            max_bytes,
            segment_bytes,
            state: Mutex::new(State {
                segments,
                active,
                next_seq,
                cursor,
            }),
            bytes: AtomicU64::new(bytes),
            dropped: AtomicU64::new(0),
        })
    }

    /// The spool's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one row per item, as `encode(item, seq, out)` writes it (one line, ending in
    /// `\n`), and syncs them to disk. Returns how many were refused because the spool is full
    /// (all of them or none). A failed write leaves the spool as it was, so it can be retried.
    pub fn append<T>(
        &self,
        items: &[T],
        mut encode: impl FnMut(&T, u64, &mut Vec<u8>),
    ) -> crate::Result<u64> {
        if items.is_empty() {
            return Ok(0);
        }
        let mut state = self.state.lock().expect("spool lock");
        let mut buf = Vec::with_capacity(items.len() * 1024);
        for (i, item) in items.iter().enumerate() {
            encode(item, state.next_seq + i as u64, &mut buf);
        }
        if self.bytes.load(Ordering::Relaxed) + buf.len() as u64 > self.max_bytes {
            self.dropped
                .fetch_add(items.len() as u64, Ordering::Relaxed);
            return Ok(items.len() as u64);
        }
        let (mut active_first, mut active_len) = *state.segments.last().expect("one segment");
        if active_len > 0 && active_len + buf.len() as u64 > self.segment_bytes {
            active_first = state.next_seq;
            active_len = 0;
            let path = segment_path(&self.dir, active_first);
            state.active = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| io_err(&path, e))?;
            state.segments.push((active_first, 0));
        }
        let path = segment_path(&self.dir, active_first);
        let written = state
            .active
            .write_all(&buf)
            .and_then(|()| state.active.sync_data());
        if let Err(e) = written {
            // Leave no half row behind: the next try appends after whole rows only.
            let _ = state.active.set_len(active_len);
            return Err(io_err(&path, e));
        }
        state.segments.last_mut().expect("one segment").1 += buf.len() as u64;
        state.next_seq += items.len() as u64;
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(0)
    }

    /// Reads up to `max_rows` rows (and about `max_bytes`, always whole rows, at least one)
    /// from the cursor on; `None` when every row was taken.
    pub fn read(&self, max_rows: u64, max_bytes: u64) -> crate::Result<Option<Batch>> {
        loop {
            let (cursor, next_segment) = {
                let state = self.state.lock().expect("spool lock");
                let next = state
                    .segments
                    .iter()
                    .map(|(first, _)| *first)
                    .find(|first| *first > state.cursor.segment);
                (state.cursor, next)
            };
            let path = segment_path(&self.dir, cursor.segment);
            let mut file = File::open(&path).map_err(|e| io_err(&path, e))?;
            file.seek(SeekFrom::Start(cursor.offset))
                .map_err(|e| io_err(&path, e))?;
            let mut data = Vec::new();
            let mut reader = file.take(max_bytes.max(1));
            reader
                .read_to_end(&mut data)
                .map_err(|e| io_err(&path, e))?;
            // A row longer than max_bytes: read on to its end.
            if !data.contains(&b'\n') && !data.is_empty() {
                let mut file = reader.into_inner();
                let mut rest = Vec::new();
                file.read_to_end(&mut rest).map_err(|e| io_err(&path, e))?;
                if let Some(end) = rest.iter().position(|b| *b == b'\n') {
                    data.extend_from_slice(&rest[..=end]);
                }
            }
            let mut whole = data.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let mut count = memchr::memchr_iter(b'\n', &data[..whole]).count() as u64;
            if count > max_rows {
                whole = memchr::memchr_iter(b'\n', &data)
                    .nth(max_rows as usize - 1)
                    .expect("more rows than max_rows")
                    + 1;
                count = max_rows;
            }
            data.truncate(whole);
            if count > 0 {
                return Ok(Some(Batch {
                    data,
                    first_seq: cursor.seq,
                    count,
                    end: Cursor {
                        segment: cursor.segment,
                        offset: cursor.offset + whole as u64,
                        seq: cursor.seq + count,
                    },
                }));
            }
            // This segment is read to its end: a newer one means it is complete.
            let Some(next) = next_segment else {
                return Ok(None);
            };
            let mut state = self.state.lock().expect("spool lock");
            if state.cursor == cursor {
                if next != cursor.seq {
                    tracing::warn!(
                        segment = next,
                        expected = cursor.seq,
                        "spool segments do not follow each other"
                    );
                }
                state.cursor = Cursor {
                    segment: next,
                    offset: 0,
                    seq: next,
                };
            }
        }
    }

    /// Marks every row before `end` as taken: saves the cursor and deletes the segments
    /// that hold only taken rows.
    pub fn commit(&self, end: Cursor) -> crate::Result<()> {
        let mut state = self.state.lock().expect("spool lock");
        state.cursor = end;
        let text = format!("{} {} {}\n", end.segment, end.offset, end.seq);
        write_atomically(&self.dir.join("cursor"), text.as_bytes())?;
        while state.segments.len() > 1 && state.segments[0].0 < end.segment {
            let (first, len) = state.segments.remove(0);
            let path = segment_path(&self.dir, first);
            std::fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
            self.bytes.fetch_sub(len, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Its figures.
    pub fn stats(&self) -> SpoolStats {
        let state = self.state.lock().expect("spool lock");
        SpoolStats {
            bytes: self.bytes.load(Ordering::Relaxed),
            waiting: state.next_seq.saturating_sub(state.cursor.seq),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }
}

fn segment_path(dir: &Path, first: u64) -> PathBuf {
    dir.join(format!("{first:020}.jsonl"))
}

/// Replaces `path` with `data` so that a reader sees the old or the new content, never half.
fn write_atomically(path: &Path, data: &[u8]) -> crate::Result<()> {
    let tmp = path.with_extension("tmp");
    let result = File::create(&tmp)
        .and_then(|mut f| f.write_all(data).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    result.map_err(|e| io_err(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: &u64, seq: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("{{\"n\":{n},\"seq\":{seq}}}\n").as_bytes());
    }

    fn seqs(batch: &Batch) -> Vec<u64> {
        batch.rows().map(|(s, _)| s).collect()
    }

    #[test]
    fn rows_come_back_in_order_across_segments_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open_with_segments(dir.path(), 1 << 20, 60).unwrap();
        let items: Vec<u64> = (0..10).collect();
        for chunk in items.chunks(3) {
            assert_eq!(spool.append(chunk, row).unwrap(), 0);
        }
        assert_eq!(spool.stats().waiting, 10);
        let batch = spool.read(4, 1 << 20).unwrap().unwrap();
        assert_eq!(seqs(&batch), [1, 2, 3]);
        // Each row says its own number: the line and the number agree.
        for (seq, line) in batch.rows() {
            assert!(
                std::str::from_utf8(line)
                    .unwrap()
                    .ends_with(&format!("\"seq\":{seq}}}"))
            );
        }
        spool.commit(batch.end).unwrap();
        drop(spool);
        // Reopened: the cursor is where it was, and the next rows continue the numbering.
        let spool = Spool::open_with_segments(dir.path(), 1 << 20, 60).unwrap();
        spool.append(&[10u64], row).unwrap();
        let mut seen = Vec::new();
        while let Some(batch) = spool.read(2, 1 << 20).unwrap() {
            seen.extend(seqs(&batch));
            spool.commit(batch.end).unwrap();
        }
        assert_eq!(seen, (4..=11).collect::<Vec<_>>());
        let stats = spool.stats();
        assert_eq!(stats.waiting, 0);
        // Taken segments are deleted; the active one stays.
        let segments = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension() == Some("jsonl".as_ref()))
            .count();
        assert_eq!(segments, 1);
        assert_eq!(
            stats.bytes,
            std::fs::metadata(segment_path(dir.path(), 10))
                .unwrap()
                .len()
        );
    }

    #[test]
    fn a_full_spool_refuses_new_rows_and_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), 60).unwrap();
        assert_eq!(spool.append(&[1u64, 2], row).unwrap(), 0);
        assert_eq!(spool.append(&[3u64, 4], row).unwrap(), 2);
        let stats = spool.stats();
        assert_eq!((stats.waiting, stats.dropped), (2, 2));
        // The refused rows took no numbers: the next row follows the last kept one.
        let batch = spool.read(10, 1 << 20).unwrap().unwrap();
        spool.commit(batch.end).unwrap();
        assert_eq!(seqs(&batch), [1, 2]);
    }

    #[test]
    fn a_half_written_row_is_cut_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), 1 << 20).unwrap();
        spool.append(&[1u64, 2], row).unwrap();
        drop(spool);
        let path = segment_path(dir.path(), 1);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"n\":3,\"se").unwrap();
        let spool = Spool::open(dir.path(), 1 << 20).unwrap();
        spool.append(&[4u64], row).unwrap();
        let batch = spool.read(10, 1 << 20).unwrap().unwrap();
        assert_eq!(seqs(&batch), [1, 2, 3]);
        let text = String::from_utf8(batch.data).unwrap();
        assert!(text.ends_with("{\"n\":4,\"seq\":3}\n"), "{text}");
    }

    #[test]
    fn a_spool_id_that_is_not_an_id_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("id"), "x' OR 1=1 --").unwrap();
        let err = Spool::open(dir.path(), 1 << 20).err().unwrap().to_string();
        assert!(err.contains("not a spool id"), "{err}");
        assert!(err.contains("/id"), "says which file: {err}");
    }

    #[test]
    fn a_row_longer_than_the_read_size_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), 1 << 20).unwrap();
        spool.append(&[123456789u64, 2], row).unwrap();
        let batch = spool.read(10, 5).unwrap().unwrap();
        assert_eq!(seqs(&batch), [1]);
        assert_eq!(batch.data, b"{\"n\":123456789,\"seq\":1}\n");
    }
}
