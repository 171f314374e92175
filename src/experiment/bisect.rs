//! Bisection of a slowdown over a git history (`osbench bisect`): two
//! detached work trees of the repository, one at the known-good revision
//! (built once) and one where `git bisect` checks out each candidate. Each
//! step builds the candidate and has it judged against the good build by a
//! caller-supplied judge (the CLI's interleaved A/B, `osbench time` or `run`
//! with `--bisect-exit`); its outcome becomes `git bisect good`, `bad` or
//! `skip`, until git names the first bad commit. The work trees and the
//! bisection state go when the [`Bisection`] is dropped; the repository's
//! own work tree and checkout are never touched. Left out: measuring (the
//! judge's), and bisecting over anything but git.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::compare::BisectStep;
use crate::error::{Error, Result};

/// One bisection step: the candidate, what its A/B said, what git was told.
#[derive(Debug, Clone)]
pub struct Step {
    pub commit: String,
    pub subject: String,
    pub outcome: BisectStep,
    /// The verdict in words (or why the step was skipped).
    pub verdict: String,
}

/// Where a bisection stands after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// A new candidate is checked out.
    Next,
    /// Git named the first bad commit (its full hash).
    FirstBad(String),
    /// Only skipped commits are left: git's words.
    Undecidable(String),
}

/// A running bisection and its two work trees.
pub struct Bisection {
    repo: PathBuf,
    good_tree: PathBuf,
    candidate_tree: PathBuf,
    pub good: String,
    pub bad: String,
    pub steps: Vec<Step>,
}

/// `git ARGS` in `dir`: its standard output, or an error with its standard error.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let (ok, stdout, stderr) = git_output(dir, args)?;
    if !ok {
        return Err(Error::Usage(format!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            stderr.trim()
        )));
    }
    Ok(stdout)
}

/// `git ARGS` in `dir`: whether it succeeded, its standard output and error.
fn git_output(dir: &Path, args: &[&str]) -> Result<(bool, String, String)> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io("running git (is it installed?)", e))?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Ok((out.status.success(), text(&out.stdout), text(&out.stderr)))
}

/// `rev` as a full commit hash.
fn commit_of(repo: &Path, rev: &str) -> Result<String> {
    let spec = format!("{rev}^{{commit}}");
    git(repo, &["rev-parse", "--verify", "--quiet", &spec])
        .map(|s| s.trim().to_string())
        .map_err(|_| Error::Usage(format!("'{rev}' is not a commit of {}", repo.display())))
}

impl Bisection {
    /// Starts bisecting `repo` between `good` and `bad` in work trees made
    /// under `dir` (`good`, `candidate`); the candidate tree is left at BAD,
    /// for the caller to confirm the slowdown first ([`Self::begin`]).
    pub fn start(repo: &Path, dir: &Path, good: &str, bad: &str) -> Result<Self> {
        let (good, bad) = (commit_of(repo, good)?, commit_of(repo, bad)?);
        if good == bad {
            return Err(Error::Usage(
                "--good and --bad name the same commit: nothing to bisect".into(),
            ));
        }
        let is_ancestor = Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(["merge-base", "--is-ancestor", &good, &bad])
            .status()
            .map_err(|e| Error::io("running git", e))?;
        if !is_ancestor.success() {
            return Err(Error::Usage(format!(
                "--good {good:.12} is not an ancestor of --bad {bad:.12}; give a good revision \
                 older than the bad one"
            )));
        }
        let bisection = Self {
            repo: repo.to_path_buf(),
            good_tree: dir.join("good"),
            candidate_tree: dir.join("candidate"),
            good,
            bad,
            steps: Vec::new(),
        };
        for (tree, rev) in [
            (&bisection.good_tree, &bisection.good),
            (&bisection.candidate_tree, &bisection.bad),
        ] {
            let tree = tree.to_string_lossy();
            git(
                repo,
                &["worktree", "add", "--detach", "--quiet", &tree, rev],
            )?;
        }
        Ok(bisection)
    }

    /// The work tree of the known-good revision.
    pub fn good_tree(&self) -> &Path {
        &self.good_tree
    }

    /// The work tree of the candidate under test.
    pub fn candidate_tree(&self) -> &Path {
        &self.candidate_tree
    }

    /// The candidate checked out: its full hash and subject line.
    pub fn candidate(&self) -> Result<(String, String)> {
        let line = git(&self.candidate_tree, &["log", "-1", "--format=%H %s"])?;
        let (hash, subject) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        Ok((hash.to_string(), subject.to_string()))
    }

    /// Starts `git bisect` (after BAD was confirmed slower): checks out the
    /// first candidate.
    pub fn begin(&mut self) -> Result<Progress> {
        let out = git(
            &self.candidate_tree,
            &["bisect", "start", &self.bad, &self.good],
        )?;
        Ok(progress(&out))
    }

    /// Records `step` (the candidate checked out) and tells git.
    pub fn mark(&mut self, step: Step) -> Result<Progress> {
        let word = step.outcome.as_str();
        self.steps.push(step);
        // Git fails `bisect skip` when only skipped commits are left, saying so.
        let (ok, out, err) = git_output(&self.candidate_tree, &["bisect", word])?;
        match progress(&out) {
            Progress::Next if !ok => Err(Error::Usage(format!(
                "git bisect {word} in {}: {}",
                self.candidate_tree.display(),
                err.trim()
            ))),
            progress => Ok(progress),
        }
    }

    /// The subject line of `commit`.
    pub fn subject(&self, commit: &str) -> String {
        git(&self.repo, &["log", "-1", "--format=%s", commit])
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    }
}

/// What git's answer to `bisect start/good/bad/skip` says.
fn progress(out: &str) -> Progress {
    if let Some(line) = out.lines().find(|l| l.ends_with("is the first bad commit")) {
        let hash = line.split_whitespace().next().unwrap_or_default();
        return Progress::FirstBad(hash.to_string());
    }
    if out.contains("only 'skip'ped commits left") {
        return Progress::Undecidable(out.trim().to_string());
    }
    Progress::Next
}

impl Drop for Bisection {
    fn drop(&mut self) {
        let _ = git(&self.candidate_tree, &["bisect", "reset"]);
        for tree in [&self.candidate_tree, &self.good_tree] {
            let tree = tree.to_string_lossy();
            let _ = git(&self.repo, &["worktree", "remove", "--force", &tree]);
        }
        let _ = git(&self.repo, &["worktree", "prune"]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_answers_are_read() {
        let found = "abc123 is the first bad commit\ncommit abc123\n";
        assert_eq!(progress(found), Progress::FirstBad("abc123".into()));
        assert_eq!(
            progress("Bisecting: 3 revisions left to test after this (roughly 2 steps)\n"),
            Progress::Next
        );
        let stuck = "There are only 'skip'ped commits left to test.\nThe first bad commit could be any of:\n";
        assert!(matches!(progress(stuck), Progress::Undecidable(_)));
    }
}
