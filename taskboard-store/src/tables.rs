//! Every table of the store, with its key layout. Keys are byte strings
//! built by [`super::codec::Key`]: uuids as their 16 bytes, integers
//! big-endian, positions as order-preserving f64 bits, strings as UTF-8
//! (followed by a 0 byte where more fields follow). Values are records
//! encoded by [`super::codec::encode`] unless noted; `()` means an empty
//! value (the key is the information).

/// A named table. `index` is its place in [`ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Table {
    pub name: &'static str,
    pub index: usize,
}

macro_rules! tables {
    ($($(#[$doc:meta])* $ident:ident = $name:literal;)+) => {
        tables!(@each 0usize; $($(#[$doc])* $ident = $name;)+);
        /// All tables, in declaration order.
        pub const ALL: &[Table] = &[$($ident),+];
    };
    (@each $n:expr; $(#[$doc:meta])* $ident:ident = $name:literal; $($rest:tt)*) => {
        $(#[$doc])*
        pub const $ident: Table = Table { name: $name, index: $n };
        tables!(@each $n + 1usize; $($rest)*);
    };
    (@each $n:expr;) => {};
}

tables! {
    /// text key → value; `schema` (u32), `event_seq` (u64), `ready_index`
    /// (u32, present once the ready index covers every task),
    /// `title_fold` (where the title index's fold stands, see
    /// `records::titles`).
    META = "meta";
    /// member_id → MemberRecord
    MEMBERS = "memberid_member";
    /// slug → member_id
    MEMBER_SLUG = "slug_memberid";
    /// lower(name) 0 member_id → ()
    MEMBER_NAME = "name_memberid";
    /// member_id → Secret (password hash, token hash)
    MEMBER_SECRET = "memberid_secret";
    /// sha256(agent token) → member_id
    TOKEN_MEMBER = "tokenhash_memberid";
    /// token_id → AccessTokenRecord (its hash, never the token)
    ACCESS_TOKENS = "tokenid_accesstoken";
    /// member_id token_id → () for each access token of a member
    MEMBER_ACCESS_TOKENS = "memberid_tokenid";
    /// sha256(access token) → token_id
    ACCESS_TOKEN_HASH = "accesstokenhash_tokenid";
    /// project_id → ProjectRecord
    PROJECTS = "projectid_project";
    /// slug → project_id
    PROJECT_SLUG = "slug_projectid";
    /// project_id member_id → ProjectRole
    PROJECT_MEMBERS = "projectid_memberid_role";
    /// chat_id → ChatRecord
    CHATS = "chatid_chat";
    /// task_id → TaskRecord
    TASKS = "taskid_task";
    /// project_id number → task_id
    TASK_NUMBER = "projectid_number_taskid";
    /// project_id position number → task_id
    PROJECT_TASKS = "projectid_position_number_taskid";
    /// project_id status position number → task_id
    PROJECT_STATUS_TASKS = "projectid_status_position_number_taskid";
    /// assignee_id task_id → ()
    ASSIGNEE_TASKS = "assigneeid_taskid";
    /// reviewer_id task_id → ()
    REVIEWER_TASKS = "reviewerid_taskid";
    /// label_id task_id → ()
    LABEL_TASKS = "labelid_taskid";
    /// position number task_id → (): every task in list order
    TASK_ORDER = "position_number_taskid";
    /// status position number task_id → ()
    STATUS_ORDER = "status_position_number_taskid";
    /// assignee_id position number task_id → ()
    ASSIGNEE_ORDER = "assigneeid_position_number_taskid";
    /// project_id assignee_id position number task_id → ()
    PROJECT_ASSIGNEE_ORDER = "projectid_assigneeid_position_number_taskid";
    /// project_id label_id position number task_id → ()
    PROJECT_LABEL_ORDER = "projectid_labelid_position_number_taskid";
    /// trigram fold first_id → the ids of the tasks (16 bytes each, in
    /// order, at most 255) whose title that fold indexed under the
    /// trigram, from `first_id` on: three bytes of the
    /// lower-cased title (UTF-8), one posting per distinct trigram of the
    /// title without whitespace; a title in TITLE_RECENT has only the
    /// slices folded since it was written. Builds before the posting lists
    /// wrote `trigram task_id` → () per posting (and indexed trigrams with
    /// whitespace too); those are read alike (see `records::titles`)
    TITLE_TRIGRAMS = "trigram_taskid";
    /// parent_id task_id → ()
    SUBTASKS = "parentid_taskid";
    /// task_id step_id → StepRecord
    STEPS = "taskid_stepid_step";
    /// link_id → LinkRecord
    LINKS = "linkid_link";
    /// source_id link_id → ()
    LINKS_FROM = "sourceid_linkid";
    /// target_id link_id → ()
    LINKS_TO = "targetid_linkid";
    /// task_id action_id → ActionRecord
    ACTIONS = "taskid_actionid_action";
    /// message_id → MessageRecord (ids are time-ordered, so this is also
    /// the board-wide message order)
    MESSAGES = "messageid_message";
    /// chat_id message_id → ()
    CHAT_MESSAGES = "chatid_messageid";
    /// task_id message_id → ()
    TASK_MESSAGES = "taskid_messageid";
    /// parent_id message_id → ()
    REPLIES = "parentid_messageid";
    /// file_id → UploadRecord
    UPLOADS = "fileid_upload";
    /// created_at(ms) file_id → () for uploads not yet bound to a message
    UNBOUND_UPLOADS = "createdms_fileid_unbound";
    /// file_id → ProjectFileRecord
    PROJECT_FILES = "fileid_projectfile";
    /// project_id filename → file_id
    PROJECT_FILE_NAME = "projectid_filename_fileid";
    /// label_id → LabelRecord
    LABELS = "labelid_label";
    /// lower(name) → label_id
    LABEL_NAME = "name_labelid";
    /// seq → EventRecord; a `message.new` names its message instead of
    /// holding it (see `records::event_log`)
    EVENTS = "seq_event";
    /// message_id seq → () for an event that names the message, written by
    /// builds before the message record kept its event's seq, and by
    /// imported events; removed with the message (`records::event_log`)
    MESSAGE_EVENTS = "messageid_seq";
    /// rank(priority) rank(status) position number task_id → project_id:
    /// the ready tasks of the board in ready order (urgent first, todo
    /// before backlog, then position and number)
    READY_TASKS = "priority_status_position_number_taskid_ready";
    /// project_id rank(priority) rank(status) position number task_id → ():
    /// the same order within one project
    PROJECT_READY_TASKS = "projectid_priority_status_position_number_taskid_ready";
    /// expires_at(ms) task_id → () for every task held under a lease
    LEASES = "expiresms_taskid_lease";
    /// member_id lookup → StoredAnswer: the answer stored for an
    /// idempotency key, where lookup is the hex SHA-256 of the member and
    /// the key (the key itself is not stored; answers stored before this
    /// layout have the key in its place)
    IDEMPOTENCY = "memberid_key_answer";
    /// stored_at(ms) member_id lookup → () so old answers are swept in order
    IDEMPOTENCY_AGE = "storedms_memberid_key";
    /// webhook_id → WebhookRecord (its secret included)
    WEBHOOKS = "webhookid_webhook";
    /// webhook_id → u64 for each active webhook: the seq of the last
    /// event whose first attempt is done (or that it does not take).
    /// The event log keeps every event after the smallest of these.
    WEBHOOK_CURSORS = "webhookid_cursor";
    /// webhook_id → WebhookState for each webhook: its deliveries waiting
    /// for a retry (seq and when due), the claim of its sender
    WEBHOOK_STATE = "webhookid_state";
    /// webhook_id seq → DeliveryRecord: the deliveries the log keeps one
    /// by one (waiting for a retry, failed, delivered after retries,
    /// redelivered), with a copy of their frame; the pending ones and at
    /// most `board::deliveries::LOGGED` finished ones per webhook
    DELIVERIES = "webhookid_seq_delivery";
    /// webhook_id n → BatchRecord: the n-th batch of deliveries that got
    /// through at their first attempt; the last `board::deliveries::BATCHES`
    /// per webhook
    DELIVERY_BATCHES = "webhookid_n_batch";
    /// member_id process_id → Timestamp: until when a server process
    /// (an id it takes at start) lists the member as connected; renewed
    /// while it is (see `board::presence`)
    PRESENCE = "memberid_processid_until";
    /// task_id → 0xFF, the number of folds before it (u64), lower-cased
    /// title (UTF-8): the titles not yet folded into TITLE_TRIGRAMS with
    /// every slice of their trigrams (see `records::titles`)
    TITLE_RECENT = "taskid_recenttitle";
    /// project_id source 0 external_id → task_id: imported tasks by their
    /// origin (`board::import`)
    EXTERNAL_REFS = "projectid_source_externalid_taskid";
    /// run_id → RunRecord (ids are time-ordered, so this is also the
    /// board-wide run order)
    RUNS = "runid_run";
    /// task_id run_id → () for every run of a task
    TASK_RUNS = "taskid_runid";
    /// agent_id run_id → () for every run of an agent
    AGENT_RUNS = "agentid_runid";
    /// task_id → run_id: the run of the task not yet in a final state
    /// (at most one a task)
    LIVE_RUNS = "taskid_liverunid";
    /// message_id run_id → () for every run answering a message
    MESSAGE_RUNS = "messageid_runid";
    /// run_id n → TranscriptEntry: a run's transcript, n from 1
    RUN_TRANSCRIPT = "runid_n_entry";
    /// kind key → Window: the open window of failed logins of a member
    /// (`m` uuid), of a login naming none (`t` and a keyed hash of its
    /// text) or of a client address (`4` or `6` and its octets), and of
    /// the sign-ins a client address started (`s`, `4` or `6`, its
    /// octets), see `board::throttle`
    LOGIN_FAILURES = "kind_key_loginfailures";
    /// start(ms) kind key → () so ended windows are swept in order
    LOGIN_FAILURE_AGE = "startms_kind_key";
    /// sha256(state) → PendingSignIn: a single sign-on started and not
    /// yet back from the provider (`board::oidc`); the state itself is
    /// not stored. `#pending` → u64: how many there are
    OIDC_STATES = "statehash_pendingsignin";
    /// sha256(login code) → LoginCode: the one-time code a finished
    /// single sign-on hands to the page or the command line
    LOGIN_CODES = "codehash_logincode";
    /// expires(ms) kind hash → () for pending states (`s`) and login
    /// codes (`c`), so expired ones are swept in order
    OIDC_EXPIRY = "expiresms_kind_hash";
    /// issuer 0 subject → member_id: the member a provider's account
    /// signs in as
    OIDC_SUBJECTS = "issuer_subject_memberid";
    /// lower(email) → member_id for members with an email
    MEMBER_EMAIL = "email_memberid";
    /// task_id → Changes: the task's branch against its base, as the last
    /// run that recorded it saw it
    TASK_CHANGES = "taskid_changes";
    /// run_id → Changes: the change of one run (its round)
    RUN_CHANGES = "runid_changes";
    /// task_id review_id → ReviewRecord, in the order they were made
    REVIEWS = "taskid_reviewid_review";
}

/// Tables earlier builds wrote and this one neither reads nor writes:
/// `status_taskid` (status task_id → ()), an index no query read, whose
/// entry cost every task's creation and status change a write. The redb
/// backend deletes them when it opens a store; a PostgreSQL board keeps
/// their rows until `DROP TABLE` (nothing reads them).
pub const RETIRED: &[&str] = &["status_taskid"];
