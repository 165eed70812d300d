-- groundcrew store, schema version 1. Values are the JSON the bbolt store
-- keeps (bytea: exact bytes, NUL characters allowed); the columns beside
-- them are what queries select on.
create table runs (
  id          text primary key,
  created_at  timestamptz not null,
  state       text not null,
  active      boolean not null,
  -- ended_at is when a finished run finished (its last update if unset):
  -- retention deletes by it.
  ended_at    timestamptz not null,
  thread      text not null default '',
  root_id     text not null default '',
  spec_ref    text not null default '',
  journal_seq bigint not null default 0,
  data        bytea not null
);
create index runs_by_time on runs (created_at desc, id desc);
create index runs_active on runs (created_at desc, id desc) where active;
create index runs_by_thread on runs (thread) where thread <> '';
create index runs_by_root on runs (root_id) where root_id <> '';
create index runs_finished on runs (ended_at) where not active;

create table specs (
  ref  text primary key,
  data bytea not null
);

create table journal (
  run_id text not null,
  seq    bigint not null,
  data   bytea not null,
  primary key (run_id, seq)
);

create table audit (
  seq    bigint primary key,
  run_id text not null default '',
  data   bytea not null
);
create index audit_by_run on audit (run_id, seq) where run_id <> '';
-- audit_head is the chain's last entry; appends lock its one row, so the
-- chain stays one chain under concurrent writers.
create table audit_head (
  id   int primary key check (id = 1),
  seq  bigint not null,
  hash text not null
);
insert into audit_head values (1, 0, '');

create table messages (
  platform text not null,
  channel  text not null,
  id       text not null,
  run_id   text not null,
  data     bytea not null,
  primary key (platform, channel, id)
);
create index messages_by_run on messages (run_id);

create table events (
  id      text primary key,
  seen_at timestamptz not null
);
create index events_by_time on events (seen_at);

create table outbox (
  id   text primary key,
  data bytea not null
);

create table digests (
  key  text primary key,
  data bytea not null
);

create table kv (
  key   text primary key,
  value bytea not null
);

create table incidents (
  id        text primary key,
  key       text not null,
  open      boolean not null,
  opened_at timestamptz not null,
  data      bytea not null
);
create index incidents_by_opened on incidents (opened_at desc);
create index incidents_open on incidents (opened_at desc) where open;
create table incident_keys (
  key         text primary key,
  incident_id text not null
);
create table incident_by_msg (
  platform    text not null,
  channel     text not null,
  id          text not null,
  incident_id text not null,
  primary key (platform, channel, id)
);

-- leader is the one leadership lease: the holder renews it; epoch (the
-- fencing token) grows by one at every change of holder, and every write
-- of a fenced store checks it in the same transaction.
create table leader (
  id         int primary key check (id = 1),
  holder     text not null,
  epoch      bigint not null,
  expires_at timestamptz not null,
  changed_at timestamptz not null
);
insert into leader values (1, '', 0, 'epoch', now());
