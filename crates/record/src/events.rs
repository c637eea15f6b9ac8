//! The live event stream: every record, as it is made, to whoever listens (the control
//! address's `/_sszgate/events`). A bounded broadcast: publishing never waits and costs
//! nothing without a listener; a listener that falls behind skips the oldest events (and is
//! told how many) — it can never slow the recorder, let alone the relay.
//!
//! Not here: filtering and the wire format (the gateway's `control`).

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::Record;

/// Events kept for the slowest listener before it starts to skip.
pub const EVENT_BACKLOG: usize = 1024;

/// The sending side, shared by the recorder's handle and its worker.
#[derive(Debug)]
pub struct Events {
    sender: broadcast::Sender<Arc<Record>>,
}

impl Default for Events {
    fn default() -> Events {
        Events {
            sender: broadcast::Sender::new(EVENT_BACKLOG),
        }
    }
}

impl Events {
    /// A new listener: every record from now on, or a `Lagged(n)` when it skipped `n`.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Record>> {
        self.sender.subscribe()
    }

    /// Listeners now.
    pub fn listeners(&self) -> usize {
        self.sender.receiver_count()
    }

    /// Publishes `record` when anyone listens (a copy per record then, none otherwise).
    pub(crate) fn publish(&self, record: &Record) {
        if self.sender.receiver_count() > 0 {
            let _ = self.sender.send(Arc::new(record.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64) -> Record {
        Record {
            seq,
            ..Record::default()
        }
    }

    #[test]
    fn a_slow_listener_skips_the_oldest_and_is_told_how_many() {
        let events = Events::default();
        events.publish(&record(0)); // nobody listens: nothing kept
        let mut slow = events.subscribe();
        for seq in 1..=(EVENT_BACKLOG as u64 + 10) {
            events.publish(&record(seq));
        }
        assert_eq!(
            slow.try_recv().unwrap_err(),
            broadcast::error::TryRecvError::Lagged(10)
        );
        assert_eq!(slow.try_recv().unwrap().seq, 11);
    }
}
