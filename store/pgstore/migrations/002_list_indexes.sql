-- Indexes that match the listing queries: runs are ordered by id in byte
-- order (collate "C", as bbolt orders keys), and the thread lookup
-- (thread = $1 or root_id = $1) cannot use an index whose predicate it
-- cannot prove with a parameter.
drop index runs_by_time;
create index runs_by_time on runs (created_at desc, id collate "C" desc);
drop index runs_active;
create index runs_active on runs (created_at desc, id collate "C" desc) where active;
drop index runs_by_thread;
create index runs_by_thread on runs (thread);
drop index runs_by_root;
create index runs_by_root on runs (root_id);
