//! Translation between the two transports, one call at a time.
//!
//! A JSON-RPC request (`method` + `params`) becomes a REST request (HTTP method, target, fork
//! header, body) and back; a JSON-RPC result or error becomes a REST response (status, content
//! type, body or problem+json) and back. Which resource and which version comes from the method
//! table; the bodies go through [`Message`]. Nothing here opens a socket.
//!
//! The bridge's policy lives here too, as plain functions a test can drive without HTTP: which
//! forks a JSON-RPC call is asked under on a REST-SSZ link and when an older fork is tried
//! ([`ForkPlan`]), how bodies answers of several eras merge ([`merge_bodies`]), and what a
//! JSON-RPC answer becomes for a REST caller ([`rpc_answer_to_rest`]). Sending the requests,
//! reading the answers and the HTTP framing are the gateway's.

use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, Problem, Result},
    fork::Fork,
    message::{Blobs, Message},
    method::{
        self, Family, HttpMethod, JSON_CONTENT_TYPE, MethodSpec, PROBLEM_CONTENT_TYPE, Resource,
        Route, SSZ_CONTENT_TYPE, Scope,
    },
    scan,
};

/// A REST-SSZ request, ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestRequest {
    /// The HTTP method.
    pub method: HttpMethod,
    /// Path and query, e.g. `/engine/v1/payloads/0x…`.
    pub target: String,
    /// The `Eth-Execution-Version` value, for fork-scoped resources.
    pub fork: Option<Fork>,
    /// The body (empty for `GET`).
    pub body: Vec<u8>,
}

impl RestRequest {
    /// The `Content-Type` of the body, if it has one.
    pub fn content_type(&self) -> Option<&'static str> {
        (self.method == HttpMethod::Post).then_some(SSZ_CONTENT_TYPE)
    }
}

/// A REST-SSZ response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type`, absent for `204`.
    pub content_type: Option<&'static str>,
    /// `Cache-Control: no-store` where the spec requires it (payload retrieval).
    pub no_store: bool,
    /// The body.
    pub body: Vec<u8>,
}

/// A JSON-RPC call resolved from a REST request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcCall {
    /// The method row.
    pub method: &'static MethodSpec,
    /// The fork of the call.
    pub fork: Fork,
    /// The `params` array, as JSON.
    pub params: Vec<u8>,
    /// The typed request, for callers that need more than the JSON (e.g. versioned hashes).
    pub message: Message,
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// The message.
    pub message: String,
}

/// A problem+json body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemBody {
    /// The problem type URI.
    #[serde(rename = "type")]
    pub type_uri: String,
    /// The human-readable detail, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The REST request for a JSON-RPC call of `method_name` with `params`. `fork` picks the fork
/// where the method serves several (default: the newest it serves).
pub fn request_to_rest(
    method_name: &str,
    params: &[u8],
    fork: Option<Fork>,
) -> Result<RestRequest> {
    let method = method::by_name(method_name)?;
    let fork = fork.unwrap_or_else(|| method.latest_fork());
    method.check_fork(fork)?;
    let message = Message::from_json(method, fork, method.request, params)?;
    rest_request(method, fork, &message)
}

/// The REST request carrying `message`, the typed request of `method` under `fork`: the
/// route (a payload id or a range goes in the path), the fork header where the resource is
/// fork-scoped, and the SSZ body.
pub fn rest_request(
    method: &'static MethodSpec,
    fork: Fork,
    message: &Message,
) -> Result<RestRequest> {
    method.check_fork(fork)?;
    let fork_header = (method.resource.scope() == Scope::ForkScoped).then_some(fork);
    let mut route = Route {
        resource: method.resource,
        payload_id: None,
        range: None,
    };
    let body = match (message, method.resource) {
        (Message::PayloadId(id), _) => {
            route.payload_id = Some(id.0.0);
            Vec::new()
        }
        (Message::BodiesByRange { from, count }, _) => {
            route.range = Some((*from, *count));
            Vec::new()
        }
        (_, Resource::Capabilities | Resource::Identity) => Vec::new(),
        _ => message.to_ssz(fork)?,
    };
    Ok(RestRequest {
        method: method.resource.http_method(),
        target: route.target(),
        fork: fork_header,
        body,
    })
}

/// sszgate's own `ClientVersionV1` as `engine_getClientVersionV1` params: what it sends when
/// it asks an EL on its own behalf.
pub fn own_client_version_params() -> Vec<u8> {
    format!(
        r#"[{{"code":"SG","name":"sszgate","version":"{}","commit":"00000000"}}]"#,
        env!("CARGO_PKG_VERSION")
    )
    .into_bytes()
}

/// The JSON-RPC call for a REST request. `fork_header` is the `Eth-Execution-Version` value;
/// it must be present for fork-scoped resources and is ignored otherwise.
pub fn request_from_rest(
    http_method: &str,
    target: &str,
    fork_header: Option<&str>,
    body: &[u8],
) -> Result<RpcCall> {
    request_from_route(&Route::parse(http_method, target)?, fork_header, body)
}

/// [`request_from_rest`] for a request whose route is already parsed (the gateway parses it
/// once, from the request head).
pub fn request_from_route(
    route: &Route,
    fork_header: Option<&str>,
    body: &[u8],
) -> Result<RpcCall> {
    let fork = match (route.resource.scope(), fork_header) {
        (Scope::ForkScoped, None) => {
            return Err(Error::UnknownFork(format!(
                "(missing {} header)",
                method::FORK_HEADER
            )));
        }
        (Scope::ForkScoped, Some(value)) => value.parse::<Fork>()?,
        // Not fork-scoped: the header is ignored, the table row carries the forks.
        _ => Fork::Amsterdam,
    };
    let method = method::for_resource(route.resource, fork)?;
    let message = match route.resource {
        Resource::GetPayload => Message::PayloadId(alloy_rpc_types_engine::PayloadId::new(
            route.payload_id.expect("parsed with the route"),
        )),
        Resource::BodiesByRange => {
            let (from, count) = route.range.expect("parsed with the route");
            Message::BodiesByRange { from, count }
        }
        Resource::Capabilities => Message::Capabilities(Vec::new()),
        Resource::Identity => Message::ClientVersion(Vec::new()),
        _ => Message::from_ssz(method, fork, method.request, body)?,
    };
    let params = match &message {
        // The gateway asks these on its own behalf; the REST caller sends no body.
        Message::Capabilities(_) => b"[[]]".to_vec(),
        Message::ClientVersion(_) => own_client_version_params(),
        m => m.to_json_params()?,
    };
    Ok(RpcCall {
        method,
        fork,
        params,
        message,
    })
}

/// The REST response for a JSON-RPC `result` of `method` under `fork`.
pub fn result_to_rest(
    method: &'static MethodSpec,
    fork: Fork,
    result: &[u8],
) -> Result<RestResponse> {
    let message = Message::from_json(method, fork, method.response, result)?;
    let no_store = method.resource == Resource::GetPayload;
    if message.is_no_content() {
        return Ok(RestResponse {
            status: 204,
            content_type: None,
            no_store,
            body: Vec::new(),
        });
    }
    let content_type = if method.resource.is_json() {
        JSON_CONTENT_TYPE
    } else {
        SSZ_CONTENT_TYPE
    };
    Ok(RestResponse {
        status: 200,
        content_type: Some(content_type),
        no_store,
        body: message.to_ssz(fork)?,
    })
}

/// The JSON-RPC `result` (or error) for a REST response to a call of `method` under `fork`.
/// `blobs_requested` is the number of hashes asked for, which a `204` to `/blobs/v1` needs
/// (JSON-RPC V1 answers a `null` per blob rather than a `null` list).
pub fn result_from_rest(
    method: &'static MethodSpec,
    fork: Fork,
    status: u16,
    body: &[u8],
    blobs_requested: usize,
) -> Result<std::result::Result<Vec<u8>, RpcError>> {
    match message_from_rest(method, fork, status, body, blobs_requested)? {
        Ok(message) => Ok(Ok(message.to_json()?)),
        Err(error) => Ok(Err(error)),
    }
}

/// The typed answer (or error) in a REST response to a call of `method` under `fork`: the SSZ
/// (or JSON, for `/capabilities` and `/identity`) body of a `200`, the empty getBlobs answer of
/// a `204` (`blobs_requested` nulls for V1, `null` after), the error of a problem.
pub fn message_from_rest(
    method: &'static MethodSpec,
    fork: Fork,
    status: u16,
    body: &[u8],
    blobs_requested: usize,
) -> Result<std::result::Result<Message, RpcError>> {
    let no_content = |blobs| Ok(Ok(Message::Blobs(blobs)));
    match (status, method.resource, method.version) {
        (200, ..) => Ok(Ok(Message::from_ssz(method, fork, method.response, body)?)),
        (204, Resource::Blobs(_), 1) => no_content(Blobs::V1(vec![None; blobs_requested])),
        (204, Resource::Blobs(_), 2) => no_content(Blobs::V2(None)),
        (204, Resource::Blobs(_), 3) => no_content(Blobs::V3(None)),
        (204, Resource::Blobs(_), _) => no_content(Blobs::V4(None)),
        (204, ..) => Err(Error::invalid(
            format!("{} answer", method.resource),
            "204 No Content where the spec has a body",
        )),
        _ => Ok(Err(error_from_problem(status, body))),
    }
}

/// The REST problem response for a JSON-RPC error.
pub fn error_to_problem(error: &RpcError) -> RestResponse {
    let problem = Problem::from_rpc_code(error.code);
    problem_response(problem, Some(error.message.clone()))
}

/// A REST problem response.
pub fn problem_response(problem: Problem, detail: Option<String>) -> RestResponse {
    let body = ProblemBody {
        type_uri: problem.type_uri().to_string(),
        detail,
    };
    RestResponse {
        status: problem.http_status(),
        content_type: Some(PROBLEM_CONTENT_TYPE),
        no_store: false,
        body: serde_json::to_vec(&body).expect("a problem body serializes"),
    }
}

/// The JSON-RPC error for a REST error response (problem+json, or anything else an upstream
/// answered: the status picks the problem when the body does not name one).
pub fn error_from_problem(status: u16, body: &[u8]) -> RpcError {
    let parsed: Option<ProblemBody> = serde_json::from_slice(body).ok();
    let problem = parsed
        .as_ref()
        .and_then(|p| Problem::from_type_uri(&p.type_uri))
        .or_else(|| Problem::ALL.into_iter().find(|p| p.http_status() == status))
        .unwrap_or(Problem::Internal);
    let message = match parsed {
        Some(ProblemBody {
            detail: Some(detail),
            ..
        }) => detail,
        Some(ProblemBody { type_uri, .. }) => type_uri,
        None => format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ),
    };
    RpcError {
        code: problem.rpc_code(),
        message,
    }
}

/// The problem response for an error of this crate (a request that could not be translated).
pub fn error_response(error: &Error) -> RestResponse {
    problem_response(error.problem(), Some(error.to_string()))
}

/// True for a REST answer saying the EL does not serve the fork asked under (`400` with the
/// `unsupported-fork` problem): the bridge then asks again under an older fork.
pub fn is_unsupported_fork(status: u16, body: &[u8]) -> bool {
    status == 400 && error_from_problem(status, body).code == Problem::UnsupportedFork.rpc_code()
}

/// Merges one era's bodies answer into the entries gathered so far, by position: a slot still
/// `null` takes the new era's entry, a filled one keeps its own. True when no slot is `null`
/// any more (nothing is left to ask an older fork).
///
/// Bodies are fork-scoped by era on REST but not on JSON-RPC V1, so one JSON-RPC answer can
/// span eras: each fork answers the blocks of its own era and `null` for the rest.
pub fn merge_bodies(merged: &mut Vec<serde_json::Value>, era: Vec<serde_json::Value>) -> bool {
    if merged.len() < era.len() {
        merged.resize(era.len(), serde_json::Value::Null);
    }
    for (slot, entry) in merged.iter_mut().zip(era) {
        if slot.is_null() {
            *slot = entry;
        }
    }
    merged.iter().all(|e| !e.is_null())
}

/// The bridge's plan for one JSON-RPC call asked of a REST-SSZ EL: the forks the method
/// serves, newest first. An older fork is tried when the params do not fit a newer one (a
/// newPayloadV2 payload without withdrawals is a Paris one), when the EL answers that it does
/// not serve the fork (a getPayloadV2 build from the Paris era), and, for bodies, while some
/// entries are still `null` (see [`merge_bodies`]).
///
/// Sans I/O: the caller sends each request [`ForkPlan::next_request`] hands out, gives the
/// answer to [`ForkPlan::answer`], and reads the JSON-RPC outcome from [`ForkPlan::outcome`].
/// `B` is the caller's answer body type, kept as it is (no copy of a large answer).
pub struct ForkPlan<'p, B> {
    method: &'static MethodSpec,
    params: &'p [u8],
    /// How many of `method.forks` (oldest first) are still to be tried.
    untried: usize,
    /// Hashes asked for: a `204` to `/blobs/v1` answers a `null` per hash.
    requested: usize,
    /// Why the params did not fit the first fork they did not fit, for when none fits.
    unfit: Option<Error>,
    /// The answer the outcome is read from, with the fork it was asked under.
    last: Option<(Fork, u16, B)>,
    /// Bodies gathered era by era, once one era answered.
    merged: Option<Vec<serde_json::Value>>,
    done: bool,
}

/// What the bridge does after an answer, by [`ForkPlan::answer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextStep {
    /// Ask the next older fork, if there is one.
    TryOlder,
    /// Stop: the outcome is known.
    Done,
}

impl<'p, B: AsRef<[u8]>> ForkPlan<'p, B> {
    /// The plan for a call of `method` with `params` (raw JSON).
    pub fn new(method: &'static MethodSpec, params: &'p [u8]) -> ForkPlan<'p, B> {
        let requested = scan::array_elements(params)
            .and_then(|p| p.first().and_then(|h| scan::array_elements(h)))
            .map_or(0, |h| h.len());
        ForkPlan {
            method,
            params,
            untried: method.forks.len(),
            requested,
            unfit: None,
            last: None,
            merged: None,
            done: false,
        }
    }

    /// The next request to send and the fork it is asked under; `None` when the plan is done
    /// or no fork is left. Forks the params do not fit are passed over.
    pub fn next_request(&mut self) -> Option<(Fork, RestRequest)> {
        while !self.done && self.untried > 0 {
            self.untried -= 1;
            let fork = self.method.forks[self.untried];
            match request_to_rest(self.method.name, self.params, Some(fork)) {
                Ok(request) => return Some((fork, request)),
                Err(e) => {
                    self.unfit.get_or_insert(e);
                }
            }
        }
        None
    }

    /// Takes the EL's answer (status and decoded body) to the request of `fork`.
    pub fn answer(&mut self, fork: Fork, status: u16, body: B) -> NextStep {
        if self.is_bodies()
            && status == 200
            && let Ok(Ok(result)) =
                result_from_rest(self.method, fork, status, body.as_ref(), self.requested)
            && let Ok(serde_json::Value::Array(entries)) =
                serde_json::from_slice::<serde_json::Value>(&result)
        {
            let complete = merge_bodies(self.merged.get_or_insert_with(Vec::new), entries);
            self.last = Some((fork, status, body));
            return self.step(!complete);
        }
        if self.merged.is_some() {
            // An older era that does not answer leaves the entries it would have filled null.
            return self.step(false);
        }
        let retry = is_unsupported_fork(status, body.as_ref());
        self.last = Some((fork, status, body));
        self.step(retry)
    }

    fn step(&mut self, retry: bool) -> NextStep {
        self.done = !retry;
        if retry {
            NextStep::TryOlder
        } else {
            NextStep::Done
        }
    }

    fn is_bodies(&self) -> bool {
        matches!(
            self.method.family,
            Family::BodiesByHash | Family::BodiesByRange
        )
    }

    /// The JSON-RPC `result` or error for the caller; an error of this crate when no fork
    /// could be asked (the params fit none).
    pub fn outcome(self) -> Result<std::result::Result<Vec<u8>, RpcError>> {
        if let Some(entries) = self.merged {
            return Ok(Ok(
                serde_json::to_vec(&entries).expect("JSON values serialize")
            ));
        }
        let Some((fork, status, body)) = self.last else {
            return Err(self.unfit.expect("every method serves a fork"));
        };
        Ok(
            match result_from_rest(self.method, fork, status, body.as_ref(), self.requested) {
                Ok(outcome) => outcome,
                Err(e) => Err(RpcError {
                    code: -32603,
                    message: format!(
                        "the EL's {} answer does not translate: {e}",
                        self.method.resource
                    ),
                }),
            },
        )
    }
}

/// The REST response for the EL's JSON-RPC answer (`{"result":…}` or `{"error":…}`) to `method`
/// asked under `fork`. A payload of another fork than the one asked under is the caller's
/// mistake (`unsupported-fork`); an answer that does not translate is `internal`, naming why.
pub fn rpc_answer_to_rest(method: &'static MethodSpec, fork: Fork, answer: &[u8]) -> RestResponse {
    match scan::envelope(answer) {
        Some(scan::Envelope {
            error: Some(error), ..
        }) => {
            let error: RpcError = serde_json::from_slice(error).unwrap_or(RpcError {
                code: -32603,
                message: String::from_utf8_lossy(error).into_owned(),
            });
            error_to_problem(&error)
        }
        Some(scan::Envelope {
            result: Some(result),
            ..
        }) => match result_to_rest(method, fork, result) {
            Ok(response) => response,
            Err(e @ Error::WrongFork { .. }) => {
                problem_response(Problem::UnsupportedFork, Some(e.to_string()))
            }
            Err(e) => problem_response(
                Problem::Internal,
                Some(format!(
                    "the EL's {} answer does not translate: {e}",
                    method.name
                )),
            ),
        },
        _ => problem_response(
            Problem::Internal,
            Some("the EL's answer is not a JSON-RPC response".into()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// A Paris payload (no withdrawals) as JSON.
    fn paris_payload() -> Value {
        let word = format!("0x{}", "11".repeat(32));
        json!({
            "parentHash": word, "feeRecipient": format!("0x{}", "22".repeat(20)),
            "stateRoot": word, "receiptsRoot": word,
            "logsBloom": format!("0x{}", "00".repeat(256)), "prevRandao": word,
            "blockNumber": "0x1", "gasLimit": "0x1c9c380", "gasUsed": "0x0",
            "timestamp": "0x64", "extraData": "0x", "baseFeePerGas": "0x7",
            "blockHash": word, "transactions": []
        })
    }

    fn method(name: &str) -> &'static MethodSpec {
        method::by_name(name).unwrap()
    }

    fn problem(problem: Problem) -> RestResponse {
        problem_response(problem, Some("from the test EL".into()))
    }

    #[test]
    fn forks_are_tried_newest_first_and_an_older_one_after_unsupported_fork() {
        let m = method("engine_getPayloadV2");
        let mut plan = ForkPlan::<Vec<u8>>::new(m, br#"["0x0000000000000001"]"#);
        let (fork, request) = plan.next_request().unwrap();
        assert_eq!((fork, request.fork), (Fork::Shanghai, Some(Fork::Shanghai)));
        let refused = problem(Problem::UnsupportedFork);
        assert_eq!(
            plan.answer(fork, refused.status, refused.body),
            NextStep::TryOlder
        );
        let (fork, _) = plan.next_request().unwrap();
        assert_eq!(fork, Fork::Paris);
        let unknown = problem(Problem::UnknownPayload);
        assert_eq!(
            plan.answer(fork, unknown.status, unknown.body),
            NextStep::Done
        );
        assert!(plan.next_request().is_none());
        let error = plan.outcome().unwrap().unwrap_err();
        assert_eq!(error.code, Problem::UnknownPayload.rpc_code());
    }

    #[test]
    fn any_other_answer_ends_the_plan_at_the_newest_fork() {
        let m = method("engine_getPayloadV2");
        let mut plan = ForkPlan::<Vec<u8>>::new(m, br#"["0x0000000000000001"]"#);
        let (fork, _) = plan.next_request().unwrap();
        let unknown = problem(Problem::UnknownPayload);
        assert_eq!(
            plan.answer(fork, unknown.status, unknown.body),
            NextStep::Done
        );
        assert!(plan.next_request().is_none(), "Paris is never asked");
        assert!(plan.outcome().unwrap().is_err());
    }

    #[test]
    fn params_that_fit_only_an_older_fork_are_asked_under_it() {
        let m = method("engine_newPayloadV2");
        let params = serde_json::to_vec(&json!([paris_payload()])).unwrap();
        let mut plan = ForkPlan::<Vec<u8>>::new(m, &params);
        let (fork, request) = plan.next_request().unwrap();
        assert_eq!(
            fork,
            Fork::Paris,
            "a payload without withdrawals is a Paris one"
        );
        assert_eq!(request.fork, Some(Fork::Paris));
    }

    #[test]
    fn params_that_fit_no_fork_are_the_first_misfit_error() {
        let m = method("engine_newPayloadV2");
        let mut plan = ForkPlan::<Vec<u8>>::new(m, b"[{}]");
        assert!(plan.next_request().is_none());
        assert!(plan.outcome().is_err());
    }

    #[test]
    fn bodies_merge_by_position_and_keep_what_a_newer_era_answered() {
        let mut merged = Vec::new();
        let shanghai = vec![Value::Null, json!({"n": 1}), Value::Null];
        assert!(!merge_bodies(&mut merged, shanghai));
        let paris = vec![json!({"n": 0}), json!({"n": "paris"}), Value::Null];
        assert!(!merge_bodies(&mut merged, paris));
        assert_eq!(merged, [json!({"n": 0}), json!({"n": 1}), Value::Null]);
        // A longer answer grows the list; complete once no slot is null.
        assert!(merge_bodies(
            &mut merged,
            vec![Value::Null, Value::Null, json!(2)]
        ));
        assert_eq!(merged.len(), 3);
    }

    #[test]
    fn a_bodies_answer_spanning_eras_is_asked_fork_by_fork_and_merged() {
        let m = method("engine_getPayloadBodiesByHashV1");
        let hash = format!("\"0x{}\"", "33".repeat(32));
        let params = format!("[[{hash},{hash}]]");
        // The EL's answers: the first block is of the Paris era, the second of Shanghai's.
        let spanning = serde_json::to_vec(&json!([
            {"transactions": [], "withdrawals": null},
            {"transactions": [], "withdrawals": []}
        ]))
        .unwrap();
        let answer_under = |fork: Fork| result_to_rest(m, fork, &spanning).unwrap().body;
        let mut plan = ForkPlan::new(m, params.as_bytes());
        let mut asked = Vec::new();
        while let Some((fork, _)) = plan.next_request() {
            asked.push(fork);
            if plan.answer(fork, 200, answer_under(fork)) == NextStep::Done {
                break;
            }
        }
        assert_eq!(
            asked,
            [
                Fork::Osaka,
                Fork::Prague,
                Fork::Cancun,
                Fork::Shanghai,
                Fork::Paris
            ]
        );
        let result: Value = serde_json::from_slice(&plan.outcome().unwrap().unwrap()).unwrap();
        let entries = result.as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert!(entries.iter().all(|e| !e.is_null()), "{result}");
    }

    #[test]
    fn bodies_stop_at_an_era_that_fails_and_keep_what_was_merged() {
        let m = method("engine_getPayloadBodiesByHashV1");
        let hash = format!("\"0x{}\"", "33".repeat(32));
        let params = format!("[[{hash},{hash}]]");
        let shanghai_only = serde_json::to_vec(&json!([
            {"transactions": [], "withdrawals": null},
            {"transactions": [], "withdrawals": []}
        ]))
        .unwrap();
        let mut plan = ForkPlan::new(m, params.as_bytes());
        let (fork, _) = plan.next_request().unwrap();
        let body = result_to_rest(m, fork, &shanghai_only).unwrap().body;
        assert_eq!(plan.answer(fork, 200, body), NextStep::TryOlder);
        let (fork, _) = plan.next_request().unwrap();
        let refused = problem(Problem::UnsupportedFork);
        assert_eq!(
            plan.answer(fork, refused.status, refused.body),
            NextStep::Done
        );
        let result: Value = serde_json::from_slice(&plan.outcome().unwrap().unwrap()).unwrap();
        assert!(result[0].is_null() && !result[1].is_null(), "{result}");
    }

    #[test]
    fn rpc_answers_become_rest_responses() {
        let m = method("engine_getPayloadV2");
        let error = rpc_answer_to_rest(
            m,
            Fork::Shanghai,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-38001,"message":"gone"}}"#,
        );
        assert_eq!(
            error,
            problem_response(Problem::UnknownPayload, Some("gone".into()))
        );
        let not_rpc = rpc_answer_to_rest(m, Fork::Shanghai, b"[1]");
        assert_eq!(not_rpc.status, Problem::Internal.http_status());
        // A Paris-era build asked under Shanghai: the caller's fork is the wrong one.
        let paris_build = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": 1,
            "result": {"executionPayload": paris_payload(), "blockValue": "0x0"}
        }))
        .unwrap();
        let wrong = rpc_answer_to_rest(m, Fork::Shanghai, &paris_build);
        let parsed: ProblemBody = serde_json::from_slice(&wrong.body).unwrap();
        assert_eq!(parsed.type_uri, Problem::UnsupportedFork.type_uri());
        let right = rpc_answer_to_rest(m, Fork::Paris, &paris_build);
        assert_eq!(
            (right.status, right.content_type, right.no_store),
            (200, Some(SSZ_CONTENT_TYPE), true)
        );
    }
}
