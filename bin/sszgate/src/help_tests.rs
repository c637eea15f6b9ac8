//! Checks of the whole command tree's help against the tree itself, so that help cannot drift
//! from the code: every `--flag` and subcommand a help text names exists, no text promises
//! as future what exists, every group's about names each of its subcommands, and the lab
//! commands are listed apart from the operator commands. The flags' own behaviour is tested
//! where they are resolved (`proxy::settings`, `flags`).

use std::collections::BTreeSet;

use clap::CommandFactory;

use crate::Cli;

/// A command with the subcommand names that lead to it from the root.
struct Node<'a> {
    path: String,
    cmd: &'a clap::Command,
}

/// Every command of the tree, the root first.
fn nodes(cmd: &clap::Command) -> Vec<Node<'_>> {
    let mut out = vec![Node {
        path: cmd.get_name().to_string(),
        cmd,
    }];
    let mut i = 0;
    while i < out.len() {
        let (path, parent) = (out[i].path.clone(), out[i].cmd);
        for sub in parent.get_subcommands() {
            let path = format!("{path} {}", sub.get_name());
            out.push(Node { path, cmd: sub });
        }
        i += 1;
    }
    out
}

/// Every help text of one command: its own and its arguments', with where each is from.
fn texts(node: &Node<'_>) -> Vec<(String, String)> {
    let cmd = node.cmd;
    let own = [
        cmd.get_about(),
        cmd.get_long_about(),
        cmd.get_before_help(),
        cmd.get_before_long_help(),
        cmd.get_after_help(),
        cmd.get_after_long_help(),
    ];
    let mut out: Vec<_> = own
        .into_iter()
        .flatten()
        .map(|text| (node.path.clone(), text.to_string()))
        .collect();
    for arg in cmd.get_arguments() {
        let place = format!("{} {}", node.path, arg.get_id());
        let values = arg.get_possible_values();
        let value_helps = values.iter().filter_map(|v| v.get_help());
        let helps = [arg.get_help(), arg.get_long_help()].into_iter().flatten();
        for text in helps.chain(value_helps) {
            out.push((place.clone(), text.to_string()));
        }
    }
    out
}

/// Every help text of the tree.
fn all_texts() -> Vec<(String, String)> {
    let root = Cli::command();
    nodes(&root).iter().flat_map(texts).collect()
}

/// The `--flag` names in `text`.
fn flags_named(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("--") {
        let rest = &text[at + 2..];
        let end = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.push(name.trim_end_matches('-').to_string());
        }
    }
    out
}

/// The command lines a text shows: `sszgate …` and `bench …`-style spans in backticks, and
/// indented example lines (each `|`-separated part) that start with `sszgate `.
fn command_lines(text: &str) -> Vec<String> {
    let backticked = text.split('`').skip(1).step_by(2).map(str::to_string);
    let examples = text
        .lines()
        .filter(|line| line.starts_with(char::is_whitespace))
        .flat_map(|line| line.split('|'))
        .map(str::trim)
        .filter(|part| part.starts_with("sszgate "))
        .map(str::to_string);
    backticked.chain(examples).collect()
}

/// Checks that the words of `line` that name subcommands name existing ones; `None` when
/// the line is not a command line at all.
fn check_command_line(root: &clap::Command, line: &str) -> Option<Result<(), String>> {
    let mut words = line.split_whitespace().peekable();
    if words.peek() == Some(&"sszgate") {
        words.next();
    } else {
        // A span such as `bench proxy` names a group's subcommand without the binary's name.
        let first = words.peek()?;
        let group = root.find_subcommand(first)?;
        group.get_subcommands().next()?;
    }
    let mut cmd = root;
    for word in words {
        if word.starts_with('-') || cmd.get_subcommands().next().is_none() {
            break;
        }
        match cmd.find_subcommand(word) {
            Some(sub) => cmd = sub,
            None => {
                return Some(Err(format!(
                    "no subcommand {word:?} of {:?}",
                    cmd.get_name()
                )));
            }
        }
    }
    Some(Ok(()))
}

#[test]
fn the_tree_is_well_formed() {
    Cli::command().debug_assert();
}

#[test]
fn every_flag_a_help_text_names_exists() {
    let root = Cli::command();
    let mut longs: BTreeSet<String> = ["help", "version"].map(String::from).into();
    for node in nodes(&root) {
        let args = node.cmd.get_arguments();
        longs.extend(args.filter_map(|a| a.get_long()).map(String::from));
    }
    let mut unknown = Vec::new();
    for (place, text) in all_texts() {
        for flag in flags_named(&text) {
            if !longs.contains(&flag) {
                unknown.push(format!("{place}: --{flag}"));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "help names flags that do not exist: {unknown:#?}"
    );
}

#[test]
fn every_subcommand_a_help_text_names_exists() {
    let root = Cli::command();
    let mut wrong = Vec::new();
    for (place, text) in all_texts() {
        for line in command_lines(&text) {
            if let Some(Err(why)) = check_command_line(&root, &line) {
                wrong.push(format!("{place}: `{line}`: {why}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "help names subcommands that do not exist: {wrong:#?}"
    );
}

#[test]
fn no_help_text_promises_as_future_what_is_there() {
    let stale: Vec<_> = all_texts()
        .into_iter()
        .filter(|(_, text)| {
            let text = text.to_lowercase();
            text.contains("planned") || text.contains("not yet")
        })
        .collect();
    assert!(stale.is_empty(), "{stale:#?}");
}

#[test]
fn every_group_names_each_of_its_subcommands() {
    let root = Cli::command();
    for node in nodes(&root).iter().skip(1) {
        let about = node
            .cmd
            .get_about()
            .map(|a| a.to_string())
            .unwrap_or_default();
        // Subcommand names may hold a hyphen (ssz-chain).
        let words: BTreeSet<&str> = about
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .collect();
        for sub in node.cmd.get_subcommands() {
            let name = sub.get_name();
            assert!(
                words.contains(name),
                "`sszgate {}`'s about does not name `{name}`: {about}",
                node.path.trim_start_matches("sszgate ")
            );
        }
    }
}

/// The lab commands, listed after the operator commands.
const LAB: [&str; 3] = ["demo", "devnet", "bench"];

#[test]
fn lab_commands_are_listed_apart_from_operator_commands() {
    let root = Cli::command();
    let after = root
        .get_after_help()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let order = |sub: &clap::Command| sub.get_display_order();
    let mut last_operator = 0;
    let mut first_lab = usize::MAX;
    for sub in root.get_subcommands() {
        let name = sub.get_name();
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let lab = LAB.contains(&name);
        assert_eq!(about.starts_with("[lab]"), lab, "{name}: {about}");
        assert!(
            after.contains(name),
            "the root's after-help does not place {name}"
        );
        if lab {
            first_lab = first_lab.min(order(sub));
        } else {
            last_operator = last_operator.max(order(sub));
        }
    }
    assert!(
        last_operator < first_lab,
        "a lab command is listed among operator commands"
    );
    assert!(after.contains("Start with `sszgate demo`"), "{after}");
}

#[test]
fn the_checks_catch_what_they_look_for() {
    let root = Cli::command();
    assert_eq!(
        flags_named("e.g. --proxy-arg=--verify=off, or -- alone"),
        ["proxy-arg", "verify"]
    );
    let line = |l: &str| check_command_line(&root, l);
    assert_eq!(line("sszgate devnet up --dir dn"), Some(Ok(())));
    assert_eq!(line("bench proxy"), Some(Ok(())));
    assert!(matches!(line("bench proxies"), Some(Err(_))));
    assert!(matches!(line("sszgate record --x"), Some(Err(_))));
    assert_eq!(line("GET /engine/v1/capabilities"), None);
}

/// The long-running commands, configured by an operator's service file as often as by flags.
const DAEMONS: [&str; 2] = ["proxy", "rpc"];

/// The flags of `cmd` with no `SSZGATE_` environment variable.
fn flags_without_env(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version") && !arg.is_positional())
        .filter(|arg| {
            !arg.get_env()
                .is_some_and(|env| env.to_string_lossy().starts_with("SSZGATE_"))
        })
        .map(|arg| format!("{} --{}", cmd.get_name(), arg.get_id()))
        .collect()
}

#[test]
fn every_daemon_flag_has_an_environment_variable() {
    let root = Cli::command();
    let missing: Vec<String> = DAEMONS
        .iter()
        .flat_map(|name| {
            let cmd = root.find_subcommand(name).expect("a daemon command");
            flags_without_env(cmd)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "daemon flags without an SSZGATE_ environment variable: {missing:?}"
    );
    let bare = clap::Command::new("d")
        .arg(
            clap::Arg::new("listen")
                .long("listen")
                .env("SSZGATE_LISTEN"),
        )
        .arg(clap::Arg::new("store").long("store").env("STORE"))
        .arg(clap::Arg::new("quiet").long("quiet"));
    assert_eq!(flags_without_env(&bare), ["d --store", "d --quiet"]);
}
