//! Shared test helpers: the recorded mainnet cases in `shared/data/colibri`, and the case
//! recorded from a live Lodestar node in `tests/data/lodestar-fulu`.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

/// The directory of the recorded cases (`SSZGATE_COLIBRI_DATA` or the shared default).
pub fn data_dir() -> PathBuf {
    std::env::var_os("SSZGATE_COLIBRI_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/data/colibri"))
}

/// `(case, file name, bytes)` of every recorded file whose name starts with `prefix`, sorted.
pub fn files_matching(prefix: &str) -> Vec<(String, String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut cases: Vec<_> = std::fs::read_dir(data_dir())
        .expect("data dir")
        .flatten()
        .collect();
    cases.sort_by_key(|e| e.file_name());
    for case in cases.into_iter().filter(|e| e.path().is_dir()) {
        let mut files: Vec<_> = std::fs::read_dir(case.path())
            .expect("case dir")
            .flatten()
            .collect();
        files.sort_by_key(|e| e.file_name());
        for file in files {
            let name = file.file_name().to_string_lossy().into_owned();
            if name.starts_with(prefix) {
                let bytes = std::fs::read(file.path()).expect("read");
                out.push((case.file_name().to_string_lossy().into_owned(), name, bytes));
            }
        }
    }
    out
}

/// One recorded file of a case.
pub fn read(case: &str, name: &str) -> Vec<u8> {
    std::fs::read(data_dir().join(case).join(name)).unwrap_or_else(|e| panic!("{case}/{name}: {e}"))
}

/// The one file of `case` whose name starts with `prefix`.
pub fn read_prefixed(case: &str, prefix: &str) -> Vec<u8> {
    let dir = data_dir().join(case);
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("case dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    assert_eq!(
        names.len(),
        1,
        "{case}: files starting with {prefix}: {names:?}"
    );
    read(case, &names.remove(0))
}

/// Unix time the case was recorded at (the clock of the clients that replay it).
pub const RECORDED_AT: u64 = 1795749733;

/// The recorded Lodestar case.
pub fn lodestar_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/lodestar-fulu")
}

/// A client of the recorded Lodestar case served by `api`, bootstrapped from the served
/// finalized checkpoint, with the clock of the recording.
pub async fn lodestar_client<A: sszgate_light::BeaconApi>(api: A) -> sszgate_light::LightClient<A> {
    let spec = sszgate_light::client::fetch_chain_spec(&api).await.unwrap();
    let checkpoint = sszgate_light::client::fetch_finalized_checkpoint(&api)
        .await
        .unwrap();
    sszgate_light::LightClient::bootstrap(api, spec, checkpoint)
        .await
        .unwrap()
        .with_clock(|| RECORDED_AT)
}

/// [`lodestar_client`] synced (one update, the recorded period's).
pub async fn lodestar_client_synced<A: sszgate_light::BeaconApi>(
    api: A,
) -> sszgate_light::LightClient<A> {
    let client = lodestar_client(api).await;
    assert_eq!(client.sync().await.unwrap().updates_applied, 1);
    client
}

/// The two clients' stores agree on every header and committee.
pub fn assert_same_store<A, B>(a: &sszgate_light::LightClient<A>, b: &sszgate_light::LightClient<B>)
where
    A: sszgate_light::BeaconApi,
    B: sszgate_light::BeaconApi,
{
    let (a, b) = (a.with_store(|s| s.clone()), b.with_store(|s| s.clone()));
    assert_eq!(a.finalized_header, b.finalized_header);
    assert_eq!(a.optimistic, b.optimistic);
    assert_eq!(a.safe, b.safe);
    assert_eq!(a.current_sync_committee(), b.current_sync_committee());
    assert!(a.next_sync_committee().is_some());
    assert_eq!(a.next_sync_committee(), b.next_sync_committee());
    assert_eq!(
        a.current_max_active_participants,
        b.current_max_active_participants
    );
}
