//! Review and land: changes recorded by a run's agent, reviews anchored to
//! diff lines, rounds sent back, landings gated by approvals and handed
//! back when they fail, reviewer agents bounded by `max_rounds`, discard.

use taskboard_core::api::{NewRun, Patch, ProjectPatch, RunPatch};
use taskboard_core::model::*;
use taskboard_core::review::*;
use taskboard_core::runs::{Run, RunState};
use taskboard_core::{Actor, ErrorKind};
use uuid::Uuid;

use crate::support::*;

const DIFF_1: &str = "diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,2 +1,3 @@
 fn a() {}
+fn b() {}
 fn c() {}
";

const DIFF_2: &str = "diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,2 +1,3 @@
 fn a() {}
+fn b() -> u8 { 1 }
 fn c() {}
";

fn changes(head: &str, diff: &str) -> NewChanges {
    NewChanges {
        base_commit: "base0".into(),
        head_commit: head.into(),
        branch: "taskboard/WEB-1".into(),
        files: vec![FileChange {
            path: "src/lib.rs".into(),
            old_path: None,
            status: FileStatus::Modified,
            additions: 1,
            deletions: 0,
        }],
        diff: diff.into(),
        truncated: false,
    }
}

fn state(s: RunState) -> RunPatch {
    RunPatch { state: Some(s), ..Default::default() }
}

struct Setup {
    fx: Fx,
    project: Project,
    task: Task,
    bot: Actor,
}

async fn setup(settings: ProjectPatch) -> Setup {
    let fx = board().await;
    let project = fx.project("web").await;
    let repo =
        ProjectPatch { repo_urls: Patch::Value(vec!["https://example.com/web.git".into()]), ..settings };
    fx.board.update_project(&fx.owner, project.id, repo).await.unwrap();
    let bot = fx.agent("bot").await;
    fx.join(project.id, &bot).await;
    let task = fx.task(&project, "add b").await;
    Setup { fx, project, task, bot }
}

impl Setup {
    /// A run of the bot that records `diff` at `head` and succeeds.
    async fn work(&self, run: Run, head: &str, diff: &str) -> Run {
        let b = &self.fx.board;
        b.update_run(&self.bot, run.id, state(RunState::Running)).await.unwrap();
        let report = ChangesReport { task: changes(head, diff), run: None };
        b.record_changes(&self.bot, run.id, report).await.unwrap();
        b.update_run(&self.bot, run.id, state(RunState::Succeeded)).await.unwrap()
    }

    async fn first_round(&self) -> Run {
        let new = NewRun { agent_id: self.bot.id(), lease_seconds: Some(60), runner: None };
        let run = self.fx.board.start_run(&self.fx.owner, self.task.id, new).await.unwrap();
        self.work(run, "head1", DIFF_1).await
    }

    async fn runs(&self) -> Vec<Run> {
        let q = taskboard_core::api::RunListQuery { task_id: Some(self.task.id), ..Default::default() };
        self.fx.board.list_runs(q).await.unwrap().into_items()
    }

    async fn open_runs(&self) -> Vec<Run> {
        self.runs().await.into_iter().filter(|r| !r.state.is_final()).collect()
    }
}

fn review(verdict: Verdict, body: &str, comments: Vec<NewReviewComment>) -> NewReview {
    NewReview { verdict, body: body.into(), comments }
}

fn on(line: u32, body: &str) -> NewReviewComment {
    NewReviewComment { path: "src/lib.rs".into(), line, side: Side::New, body: body.into() }
}

#[tokio::test]
async fn a_run_records_changes_that_the_task_and_the_run_show() {
    let s = setup(ProjectPatch::default()).await;
    let b = &s.fx.board;
    let new = NewRun { agent_id: s.bot.id(), lease_seconds: Some(60), runner: None };
    let run = b.start_run(&s.fx.owner, s.task.id, new).await.unwrap();
    assert_eq!(kind(b.task_changes(s.task.id).await), ErrorKind::NotFound);
    let report = || ChangesReport { task: changes("head1", DIFF_1), run: None };
    assert_eq!(kind(b.record_changes(&s.fx.owner, run.id, report()).await), ErrorKind::Forbidden);
    let too_big = ChangesReport {
        task: NewChanges { diff: "x".repeat(MAX_DIFF_BYTES + 1), ..changes("h", "") },
        run: None,
    };
    assert_eq!(kind(b.record_changes(&s.bot, run.id, too_big).await), ErrorKind::Validation);
    let recorded = b.record_changes(&s.bot, run.id, report()).await.unwrap();
    assert_eq!(recorded.commit.as_deref(), Some("head1"));
    assert_eq!(recorded.work.changes.as_ref().map(|c| c.additions), Some(1));
    let task = s.fx.get(s.task.id).await;
    let summary = task.changes.expect("the task shows its changes");
    assert_eq!(
        (summary.branch.as_str(), summary.head_commit.as_str(), summary.files),
        ("taskboard/WEB-1", "head1", 1)
    );
    assert_eq!(task.review, TaskReview { state: ReviewState::Pending, round: 1, approvals: 0 });
    let served = b.task_changes(s.task.id).await.unwrap();
    assert_eq!((served.diff.as_str(), served.run_id), (DIFF_1, run.id));
    assert_eq!(b.run_changes(run.id).await.unwrap().head_commit, "head1");
    b.update_run(&s.bot, run.id, state(RunState::Succeeded)).await.unwrap();
    assert_eq!(kind(b.record_changes(&s.bot, run.id, report()).await), ErrorKind::Conflict, "final");
    assert_eq!(s.fx.get(s.task.id).await.status, TaskStatus::Review);
}

#[tokio::test]
async fn a_review_anchors_to_diff_lines_and_asking_for_changes_starts_the_next_round() {
    let s = setup(ProjectPatch::default()).await;
    let b = &s.fx.board;
    s.first_round().await;
    // The agent does not review its own work; a line outside the diff is refused.
    let own = b.create_review(&s.bot, s.task.id, review(Verdict::Approve, "fine", vec![])).await;
    assert_eq!(kind(own), ErrorKind::Forbidden);
    let outside =
        b.create_review(&s.fx.owner, s.task.id, review(Verdict::Comment, "", vec![on(9, "?")])).await;
    let e = outside.unwrap_err();
    assert!(e.detail().contains("line 9 (new side) of src/lib.rs is not in the diff"), "{}", e.detail());
    let empty = b.create_review(&s.fx.owner, s.task.id, review(Verdict::RequestChanges, " ", vec![])).await;
    assert_eq!(kind(empty), ErrorKind::Validation);

    let asked =
        review(Verdict::RequestChanges, "b should answer 1", vec![on(2, "return 1 here"), on(3, "keep c")]);
    let made = b.create_review(&s.fx.owner, s.task.id, asked).await.unwrap();
    assert_eq!(made.comments[0].text, "fn b() {}");
    assert_eq!((made.round, made.head_commit.as_str()), (1, "head1"));
    // The next round: a work run of the bot, answering the review.
    let open = s.open_runs().await;
    assert_eq!(open.len(), 1, "{open:?}");
    let round2 = open.into_iter().next().unwrap();
    assert_eq!((round2.agent.id, round2.work.purpose, round2.work.round), (s.bot.id(), RunPurpose::Work, 2));
    assert_eq!(round2.work.review_id, Some(made.id));
    let task = s.fx.get(s.task.id).await;
    assert_eq!((task.status, task.assignee.map(|a| a.id)), (TaskStatus::InProgress, Some(s.bot.id())));
    assert_eq!(task.review.state, ReviewState::ChangesRequested);
    // While the round runs, nobody asks again.
    let again =
        b.create_review(&s.fx.owner, s.task.id, review(Verdict::RequestChanges, "more", vec![])).await;
    assert_eq!(kind(again), ErrorKind::Conflict);

    s.work(round2, "head2", DIFF_2).await;
    let task = s.fx.get(s.task.id).await;
    assert_eq!(task.review, TaskReview { state: ReviewState::Pending, round: 2, approvals: 0 });
    let reviews = b.list_reviews(s.task.id).await.unwrap();
    let first = reviews.iter().find(|r| r.id == made.id).unwrap();
    assert!(first.comments[0].outdated, "line 2 changed in round 2");
    assert!(!first.comments[1].outdated, "line 3 did not");
}

#[tokio::test]
async fn approvals_gate_a_landing_and_a_landing_makes_the_task_done() {
    let settings = ProjectPatch { required_approvals: Patch::Value(1), ..Default::default() };
    let s = setup(settings).await;
    let b = &s.fx.board;
    let reviewer = s.fx.human("rita", Role::Member).await;
    s.fx.join(s.project.id, &reviewer).await;
    s.first_round().await;
    let squash = MergeRequest { method: MergeMethod::Squash };
    let short = b.merge_task(&s.fx.owner, s.task.id, squash.clone()).await.unwrap_err();
    assert_eq!(short.kind(), ErrorKind::Conflict);
    assert!(short.detail().contains("0 of the 1 approvals"), "{}", short.detail());
    b.create_review(&reviewer, s.task.id, review(Verdict::Approve, "good", vec![])).await.unwrap();
    assert_eq!(s.fx.get(s.task.id).await.review.state, ReviewState::Approved);
    let outsider = s.fx.human("olga", Role::Member).await;
    assert_eq!(kind(b.merge_task(&outsider, s.task.id, squash.clone()).await), ErrorKind::Forbidden);

    let land = b.merge_task(&reviewer, s.task.id, squash.clone()).await.unwrap();
    assert_eq!((land.work.purpose, land.work.merge_method), (RunPurpose::Land, Some(MergeMethod::Squash)));
    assert_eq!(land.agent.id, s.bot.id(), "the runner of the task's agent lands it");
    assert_eq!(kind(b.merge_task(&reviewer, s.task.id, squash).await), ErrorKind::Conflict, "one at a time");
    let wrong = RunPatch { merge_commit: Some("m1".into()), ..Default::default() };
    let work_run = s.runs().await.into_iter().find(|r| r.work.purpose == RunPurpose::Work).unwrap();
    assert_eq!(kind(b.update_run(&s.bot, work_run.id, wrong).await), ErrorKind::Conflict, "final");
    let done = RunPatch { merge_commit: Some("merge1".into()), ..state(RunState::Succeeded) };
    b.update_run(&s.bot, land.id, done).await.unwrap();
    let task = s.fx.get(s.task.id).await;
    assert_eq!((task.status, task.merge_commit.as_deref()), (TaskStatus::Done, Some("merge1")));
}

#[tokio::test]
async fn a_failed_landing_goes_back_to_the_agent_or_to_the_person() {
    let s = setup(ProjectPatch::default()).await;
    let b = &s.fx.board;
    s.first_round().await;
    let land = b.merge_task(&s.fx.owner, s.task.id, MergeRequest::default()).await.unwrap();
    let failed = RunPatch {
        conflicts: Some(vec!["src/lib.rs".into()]),
        stop_reason: Some("conflict".into()),
        ..state(RunState::Failed)
    };
    b.update_run(&s.bot, land.id, failed).await.unwrap();
    let repair = s.open_runs().await.pop().expect("a run brings the branch up to date");
    assert_eq!((repair.work.purpose, repair.work.repairs_run_id), (RunPurpose::Work, Some(land.id)));
    let said = messages_of(&s.fx, s.task.id).await;
    assert!(said.iter().any(|m| m.contains("conflicts with the base in src/lib.rs")), "{said:?}");
    s.work(repair, "head3", DIFF_2).await;

    let person = ProjectPatch { on_conflict: Patch::Value(OnConflict::Person), ..Default::default() };
    b.update_project(&s.fx.owner, s.project.id, person).await.unwrap();
    let land = b.merge_task(&s.fx.owner, s.task.id, MergeRequest::default()).await.unwrap();
    let failed = RunPatch { stop_reason: Some("check_command exited 1".into()), ..state(RunState::Failed) };
    b.update_run(&s.bot, land.id, failed).await.unwrap();
    assert!(s.open_runs().await.is_empty(), "left to the person");
    let said = messages_of(&s.fx, s.task.id).await;
    assert!(
        said.iter().any(|m| m.contains("check_command exited 1") && m.contains("merge again")),
        "{said:?}"
    );
}

async fn messages_of(fx: &Fx, task: Uuid) -> Vec<String> {
    let f = taskboard_core::api::MessageFilter { task_id: Some(task), ..Default::default() };
    fx.board.list_messages(f).await.unwrap().into_items().into_iter().map(|m| m.content).collect()
}

#[tokio::test]
async fn reviewer_agents_review_every_round_and_stop_after_max_rounds() {
    let fx_settings = ProjectPatch { max_rounds: Patch::Value(2), ..Default::default() };
    let s = setup(fx_settings).await;
    let b = &s.fx.board;
    let rev = s.fx.agent("rev").await;
    let reviewers = ProjectPatch { reviewers: Patch::Value(vec!["rev".into()]), ..Default::default() };
    b.update_project(&s.fx.owner, s.project.id, reviewers).await.unwrap();
    s.first_round().await;
    let review_run = |runs: Vec<Run>| {
        runs.into_iter().find(|r| r.work.purpose == RunPurpose::Review && !r.state.is_final())
    };
    let r1 = review_run(s.runs().await).expect("the reviewer reviews round 1");
    assert_eq!((r1.agent.id, r1.work.round), (rev.id(), 1));
    b.create_review(&rev, s.task.id, review(Verdict::RequestChanges, "not yet", vec![])).await.unwrap();
    b.update_run(&rev, r1.id, state(RunState::Succeeded)).await.unwrap();
    let round2 = s.open_runs().await.into_iter().find(|r| r.work.purpose == RunPurpose::Work).unwrap();
    assert_eq!(round2.work.round, 2);
    s.work(round2, "head2", DIFF_2).await;
    let r2 = review_run(s.runs().await).expect("the reviewer reviews round 2");
    b.create_review(&rev, s.task.id, review(Verdict::RequestChanges, "still not", vec![])).await.unwrap();
    b.update_run(&rev, r2.id, state(RunState::Succeeded)).await.unwrap();
    // Round 2 was the last: the task goes to its creator, nothing runs.
    assert!(s.open_runs().await.is_empty(), "agents never loop");
    let task = s.fx.get(s.task.id).await;
    assert_eq!((task.status, task.assignee.map(|a| a.id)), (TaskStatus::Review, Some(s.fx.owner.id())));
    let said = messages_of(&s.fx, s.task.id).await;
    assert!(said.iter().any(|m| m.contains("2 rounds") && m.contains("max_rounds")), "{said:?}");
    // A person still sends it back.
    b.create_review(&s.fx.owner, s.task.id, review(Verdict::RequestChanges, "one more", vec![]))
        .await
        .unwrap();
    assert_eq!(s.open_runs().await.len(), 1);
}

#[tokio::test]
async fn discarding_gives_the_task_back_and_deletes_the_branch_through_a_run() {
    let s = setup(ProjectPatch::default()).await;
    let b = &s.fx.board;
    s.first_round().await;
    let discard = b.discard_task(&s.fx.owner, s.task.id).await.unwrap();
    assert_eq!((discard.work.purpose, discard.agent.id), (RunPurpose::Discard, s.bot.id()));
    let task = s.fx.get(s.task.id).await;
    assert_eq!((task.status, task.assignee, task.changes), (TaskStatus::Todo, None, None));
    assert_eq!(task.review, TaskReview::default());
    assert_eq!(kind(b.task_changes(s.task.id).await), ErrorKind::NotFound);
    assert_eq!(kind(b.discard_task(&s.fx.owner, s.task.id).await), ErrorKind::Conflict);
}

#[tokio::test]
async fn landing_settings_are_set_by_admins_and_checked() {
    let fx = board().await;
    let p = fx.project("web").await;
    let member = fx.human("max", Role::Member).await;
    fx.agent("rev").await;
    let check = ProjectPatch { check_command: Patch::Value("cargo test".into()), ..Default::default() };
    assert_eq!(kind(fx.board.update_project(&member, p.id, check.clone()).await), ErrorKind::Forbidden);
    let updated = fx.board.update_project(&fx.owner, p.id, check).await.unwrap();
    assert_eq!(updated.landing.check_command.as_deref(), Some("cargo test"));
    assert_eq!(updated.landing.max_rounds, DEFAULT_MAX_ROUNDS);
    let bad = ProjectPatch { base_branch: Patch::Value("--upload-pack=x".into()), ..Default::default() };
    assert_eq!(kind(fx.board.update_project(&fx.owner, p.id, bad).await), ErrorKind::Validation);
    // What git refuses as a branch the board refuses too, before a runner
    // fails a landing on it.
    for name in ["main.lock", "a:b", "rel~1", "x/../y", "dev/"] {
        let bad = ProjectPatch { base_branch: Patch::Value(name.into()), ..Default::default() };
        let refused = fx.board.update_project(&fx.owner, p.id, bad).await.unwrap_err();
        assert!(refused.to_string().contains("base_branch"), "{name}: {refused}");
    }
    let release = ProjectPatch { base_branch: Patch::Value("release/2.0".into()), ..Default::default() };
    let updated = fx.board.update_project(&fx.owner, p.id, release).await.unwrap();
    assert_eq!(updated.landing.base_branch.as_deref(), Some("release/2.0"));
    let human = ProjectPatch { reviewers: Patch::Value(vec!["max".into()]), ..Default::default() };
    assert_eq!(kind(fx.board.update_project(&fx.owner, p.id, human).await), ErrorKind::Validation);
    let zero = ProjectPatch { max_rounds: Patch::Value(0), ..Default::default() };
    assert_eq!(kind(fx.board.update_project(&fx.owner, p.id, zero).await), ErrorKind::Validation);
}
