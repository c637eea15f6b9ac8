//! The EL's name on every record (`el_client`): learned by asking the EL its client version
//! (`engine_getClientVersionV1`, with the gateway's own JWT) on the first answer the upstream
//! gives, and again on the first answer after it was unreachable (a restarted EL may be
//! another version). A fleet often starts the proxy before the EL: asked once at start, every
//! record of such a run would stay unnamed.
//!
//! Not here: the CL's name (`identify`), how the question is sent (`upstream`).

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use sszgate_record::Recorder;
use tokio::sync::Notify;

use crate::{JwtSecret, ProxyConfig};

/// How long an EL that answered but gave no client version is left before it is asked again
/// (one that does not implement the method would otherwise be asked on every call).
const RETRY_AFTER_NO_VERSION: Duration = Duration::from_secs(30);

/// Where the name stands.
#[derive(Debug)]
enum State {
    /// Not known: the next answer starts an ask.
    Unknown,
    /// An ask is under way or wanted.
    Asking,
    /// Known, until the EL is unreachable.
    Known,
    /// The EL answered without a version: asked again on an answer after this instant.
    NoVersionUntil(Instant),
}

/// What the upstream knows of the EL's name, and the signal that it should be asked.
#[derive(Debug)]
pub(crate) struct ElName {
    state: Mutex<State>,
    wanted: Notify,
}

impl Default for ElName {
    fn default() -> ElName {
        ElName {
            state: Mutex::new(State::Unknown),
            wanted: Notify::new(),
        }
    }
}

/// Why an ask for the EL's client version gave no name.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NoName {
    /// The EL could not be reached (connection refused or reset, or no answer in time).
    Unreachable,
    /// The EL answered, without a client version.
    NoVersion,
}

impl ElName {
    /// The upstream answered a call: ask for the name when it is not known.
    pub(crate) fn answered(&self) {
        let mut state = self.state.lock().expect("el name lock");
        let ask = match *state {
            State::Unknown => true,
            State::NoVersionUntil(until) => Instant::now() >= until,
            State::Asking | State::Known => false,
        };
        if ask {
            *state = State::Asking;
            self.wanted.notify_one();
        }
    }

    /// The upstream could not be reached: the next answer may come from another EL.
    pub(crate) fn unreachable(&self) {
        let mut state = self.state.lock().expect("el name lock");
        if matches!(*state, State::Known | State::NoVersionUntil(_)) {
            *state = State::Unknown;
        }
    }

    /// Asks now, whatever is known (at start).
    fn ask_now(&self) {
        *self.state.lock().expect("el name lock") = State::Asking;
        self.wanted.notify_one();
    }

    /// Settles an ask.
    fn settle(&self, outcome: &Result<String, NoName>) {
        *self.state.lock().expect("el name lock") = match outcome {
            Ok(_) => State::Known,
            Err(NoName::Unreachable) => State::Unknown,
            Err(NoName::NoVersion) => {
                State::NoVersionUntil(Instant::now() + RETRY_AFTER_NO_VERSION)
            }
        };
    }
}

/// Keeps the records' `el_client` current for as long as the returned task runs: asks at
/// start, then on the first answer after the name was unknown or the EL unreachable. A name
/// once learned stays on the records until a new one is (calls that fail while the EL is
/// down are still said to be of the EL that was there).
pub fn keep_el_named(
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
    secret: JwtSecret,
) -> tokio::task::JoinHandle<()> {
    config.upstream.el_name().ask_now();
    tokio::spawn(async move {
        let name = config.upstream.el_name();
        loop {
            name.wanted.notified().await;
            let outcome = config.upstream.client_version(&secret).await;
            match &outcome {
                Ok(version) => {
                    tracing::info!(el = %version, "execution client identified");
                    recorder.set_el_client(Some(version.clone()));
                    config.upstream.named(version);
                }
                Err(why) => tracing::warn!(
                    ?why,
                    "could not ask the EL its client version (engine_getClientVersionV1); asked again on a later answer"
                ),
            }
            name.settle(&outcome);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(name: &ElName) -> String {
        format!("{:?}", *name.state.lock().unwrap())
    }

    #[test]
    fn an_answer_starts_one_ask_and_unreachability_starts_another() {
        let name = ElName::default();
        name.answered();
        assert_eq!(state(&name), "Asking");
        name.answered(); // an ask is under way: no second one
        assert_eq!(state(&name), "Asking");
        name.settle(&Ok("GE/Geth/1.17.8/abcd".into()));
        assert_eq!(state(&name), "Known");
        name.answered();
        assert_eq!(state(&name), "Known");
        name.unreachable();
        assert_eq!(state(&name), "Unknown");
        name.answered();
        assert_eq!(state(&name), "Asking");
    }

    #[test]
    fn an_el_without_a_version_is_not_asked_on_every_call() {
        let name = ElName::default();
        name.answered();
        name.settle(&Err(NoName::NoVersion));
        name.answered();
        assert!(
            state(&name).starts_with("NoVersionUntil"),
            "{}",
            state(&name)
        );
        // An ask that could not reach the EL leaves the next answer to ask again.
        name.ask_now();
        name.settle(&Err(NoName::Unreachable));
        name.answered();
        assert_eq!(state(&name), "Asking");
    }
}
