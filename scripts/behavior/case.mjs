// One case of the behavioural differential, run on the reference side, the addon side, or both.
// The step sequence is the driver's (run.mjs of the behaviour driver, see README.md here): same
// seeded choices, same board edits, same clock, same projections of every result and of the disk.
// With a recording, members and the reference-dependent draws come from it, so an addon-only run
// replays exactly the steps the reference was recorded on.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { generateCase, writeCase, mulberry32, NOW_MS } from './gen.mjs';
import { membersToCompare } from './lib.mjs';
import { createUpstreamDriver } from './upstream-driver.mjs';
import { editableTasks, errOf, msgOf, observe, plain, projectMetrics, projectStatus, readJsonOr } from './observe.mjs';

const MINUTE = 60_000;

/**
 * Runs case `ci` of `SEED` under `caseDir`.
 * - `U` + `setNow`: the reference bundle and the fake-Date setter (reference side), or null;
 * - `MemberWorkSync`: the addon class (addon side), or null;
 * - `recorded`: a recorded case ({members, steps[{refItemCount}]}) for an addon-only replay.
 * Returns {id, teamName, members, steps: [{label, now, refItemCount?, result: {up, ad}, obs: {up, ad}}]}.
 */
export async function runCase({ SEED, ci, caseDir, U = null, setNow = () => {}, MemberWorkSync = null, recorded = null, maxTasks = 40, stepsMin = 12, stepsMax = 30 }) {
  const c = generateCase(SEED, ci, { maxTasks });
  const r = mulberry32((SEED * 7919 + ci * 104729) | 0);
  const chance = (p) => r() < p;
  const int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const pick = (arr) => arr[Math.floor(r() * arr.length)];
  const rootA = path.join(caseDir, 'upstream', 'claude');
  const rootB = path.join(caseDir, 'addon', 'claude');
  const roots = [...(U ? [rootA] : []), ...(MemberWorkSync ? [rootB] : [])];
  for (const root of roots) writeCase(c, root);
  const secret = crypto.createHash('sha256').update(`behavior:${SEED}:${ci}`).digest('base64url');
  for (const root of roots) {
    const dir = path.join(root, 'teams', c.teamName, '.member-work-sync');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'report-token-secret.json'), JSON.stringify({ schemaVersion: 1, secret }, null, 2), { mode: 0o600 });
  }
  let nowMs = NOW_MS;
  setNow(nowMs);
  let members = recorded?.members;
  if (!members) {
    try {
      members = await membersToCompare(U, c, { claudeRoot: rootA }, NOW_MS);
    } catch {
      members = [];
    }
    if (members.length === 0) members = [{ normalized: 'nobody', query: 'nobody' }];
  }
  const names = members.map((m) => m.query);
  const life = { teamActive: true, activeMembers: null };
  const lifecycle = {
    isTeamActive: () => life.teamActive,
    isMemberActive: ({ memberName }) => life.activeMembers === null || life.activeMembers.includes(String(memberName).trim().toLowerCase()),
  };
  const up = U ? createUpstreamDriver(U, { claudeRoot: rootA, lifecycle }) : null;
  const ad = MemberWorkSync ? new MemberWorkSync({ claudeRoot: rootB, autoStart: false, clock: { nowMs } }) : null;
  const teamDirA = path.join(rootA, 'teams', c.teamName);
  const teamDirB = path.join(rootB, 'teams', c.teamName);
  const tasksA = path.join(rootA, 'tasks', c.teamName);
  const tasksB = path.join(rootB, 'tasks', c.teamName);
  const taskDirs = [...(up ? [tasksA] : []), ...(ad ? [tasksB] : [])];
  const teamDirs = [...(up ? [teamDirA] : []), ...(ad ? [teamDirB] : [])];
  const seenA = { journal: {} };
  const seenB = { journal: {} };
  if (up) observe(teamDirA, seenA);
  if (ad) observe(teamDirB, seenB);
  // Per-side memory of the statuses each side returned (for tokens / fingerprints of reports).
  const hist = { up: {}, ad: {} };
  const remember = (side, name, status) => {
    if (!status || typeof status !== 'object' || !status.agenda) return;
    const k = String(name).trim().toLowerCase();
    (hist[side][k] ??= []).push({ fp: status.agenda.fingerprint, token: status.reportToken, atMs: nowMs, items: status.agenda.items ?? [] });
  };
  const latest = (side, name) => {
    const h = hist[side][String(name).trim().toLowerCase()];
    return h ? h[h.length - 1] : null;
  };
  let spoolN = 0;
  let newTaskN = 0;
  const steps = int(stepsMin, stepsMax);
  const out = [];

  for (let step = 0; step < steps; step++) {
    const m = chance(0.06) ? pick(['ghost', 'user', ...names]) : pick(names);
    const roll = r();
    let op;
    if (roll < 0.14) op = 'refresh';
    else if (roll < 0.22) op = 'getStatus';
    else if (roll < 0.25) op = 'forceRefresh';
    else if (roll < 0.43) op = 'edit';
    else if (roll < 0.55) op = 'clock';
    else if (roll < 0.75) op = 'report';
    else if (roll < 0.83) op = 'turnSettled';
    else if (roll < 0.91) op = 'dispatch';
    else if (roll < 0.96) op = 'metrics';
    else op = 'lifecycle';
    if (step === steps - 1) op = 'metrics';
    const label = { op, member: m };
    let refItemCount;
    let resUp;
    let resAd;
    const both = async (fu, fa) => {
      setNow(nowMs);
      if (up) {
        U.setClaudeBasePathOverride(rootA);
        try {
          resUp = await fu();
        } catch (e) {
          resUp = { ...errOf(e), message: msgOf(e) };
        }
      }
      if (ad) {
        try {
          resAd = await fa();
        } catch (e) {
          resAd = { ...errOf(e), message: msgOf(e) };
        }
      }
    };
    const statusResult = (res, side) => {
      if (res && res.error) return { error: res.error };
      remember(side, m, res);
      return projectStatus(res);
    };

    if (op === 'refresh') {
      await both(() => up.refreshStatus({ teamName: c.teamName, memberName: m }), () => ad.refreshStatus({ teamName: c.teamName, memberName: m }));
      resUp = statusResult(resUp, 'up');
      resAd = statusResult(resAd, 'ad');
    } else if (op === 'getStatus') {
      await both(() => up.getStatus({ teamName: c.teamName, memberName: m }), () => ad.getStatus({ teamName: c.teamName, memberName: m }));
      resUp = statusResult(resUp, 'up');
      resAd = statusResult(resAd, 'ad');
    } else if (op === 'forceRefresh') {
      // reference: POST .../refresh {forceNudge:true} -> refreshStatus({forceNudge:true}); addon: getStatus({forceNudge:true})
      await both(() => up.refreshStatus({ teamName: c.teamName, memberName: m, forceNudge: true }), () => ad.getStatus({ teamName: c.teamName, memberName: m, forceNudge: true }));
      resUp = statusResult(resUp, 'up');
      resAd = statusResult(resAd, 'ad');
    } else if (op === 'clock') {
      const minutes = pick([1, 2, 3, 5, 7, 10, 14, 16, 31, 45, 61, 90, 180, 360]);
      nowMs += minutes * MINUTE;
      label.minutes = minutes;
      setNow(nowMs);
      ad?.setClockForTesting(nowMs);
      resUp = resAd = null;
    } else if (op === 'edit') {
      const tasks = editableTasks(taskDirs[0]);
      const nowIso = new Date(nowMs).toISOString();
      const kind = tasks.length === 0 ? 'add' : pick(['status', 'status', 'owner', 'review', 'approve', 'changes', 'add', 'add', 'delete', 'complete', 'complete', 'clarify', 'blocked']);
      label.edit = kind;
      const writeBoth = (rel, value) => {
        const text = JSON.stringify(value, null, 2) + '\n';
        for (const dir of taskDirs) fs.writeFileSync(path.join(dir, rel), text);
      };
      const kanbanEdit = (fn) => {
        for (const dir of teamDirs) {
          const file = path.join(dir, 'kanban-state.json');
          const k = readJsonOr(file, null);
          if (!k || typeof k !== 'object' || Array.isArray(k) || !k.tasks || typeof k.tasks !== 'object') continue;
          fn(k);
          fs.writeFileSync(file, JSON.stringify(k, null, 2) + '\n');
        }
      };
      const ev = (t, e) => {
        if (!Array.isArray(t.historyEvents)) t.historyEvents = [];
        t.historyEvents.push({ id: `beh-${ci}-${step}`, timestamp: nowIso, ...e });
      };
      const someone = () => (chance(0.1) ? 'ghost' : pick(names));
      if (kind === 'add') {
        const n = ++newTaskN;
        const id = `beh-${n}`;
        const t = { id, displayId: `#9${String(n).padStart(2, '0')}`, subject: `Behaviour task ${n}`, status: pick(['pending', 'in_progress']), owner: someone(), createdAt: nowIso, historyEvents: [{ id: `beh-${ci}-${step}`, type: 'task_created', timestamp: nowIso, actor: 'team-lead', status: 'pending' }] };
        writeBoth(`${id}.json`, t);
        label.task = id;
      } else {
        const { file, task } = pick(tasks);
        const t = task;
        label.task = String(t.id);
        const owner = typeof t.owner === 'string' ? t.owner : 'team-lead';
        if (kind === 'status') {
          const to = pick(['pending', 'in_progress', 'completed', 'deleted']);
          ev(t, { type: 'status_changed', actor: owner, from: typeof t.status === 'string' ? t.status : 'pending', to });
          t.status = to;
        } else if (kind === 'complete') {
          ev(t, { type: 'status_changed', actor: owner, from: typeof t.status === 'string' ? t.status : 'in_progress', to: 'completed' });
          t.status = 'completed';
        } else if (kind === 'owner') {
          const to = chance(0.15) ? null : someone();
          ev(t, { type: 'owner_changed', actor: 'team-lead', from: t.owner ?? null, to });
          if (to === null) delete t.owner;
          else t.owner = to;
        } else if (kind === 'review') {
          const reviewer = someone();
          ev(t, { type: 'review_requested', actor: owner, from: typeof t.reviewState === 'string' ? t.reviewState : 'none', to: 'review', reviewer });
          t.status = 'completed';
          t.reviewState = 'review';
          kanbanEdit((k) => {
            k.tasks[String(t.id)] = { column: 'review', movedAt: nowIso, reviewer };
          });
        } else if (kind === 'approve' || kind === 'changes') {
          const actor = someone();
          if (kind === 'approve') {
            ev(t, { type: 'review_approved', actor, from: 'review', to: 'approved' });
            t.reviewState = 'approved';
            kanbanEdit((k) => {
              k.tasks[String(t.id)] = { column: 'approved', movedAt: nowIso };
            });
          } else {
            ev(t, { type: 'review_changes_requested', actor, from: 'review', to: 'needsFix' });
            t.reviewState = 'needsFix';
            t.status = 'in_progress';
            kanbanEdit((k) => {
              delete k.tasks[String(t.id)];
            });
          }
        } else if (kind === 'delete') {
          for (const dir of taskDirs) fs.rmSync(path.join(dir, file), { force: true });
        } else if (kind === 'clarify') {
          t.needsClarification = chance(0.7) ? 'lead' : 'user';
        } else if (kind === 'blocked') {
          t.blockedBy = [...(Array.isArray(t.blockedBy) ? t.blockedBy : []), pick(['missing-dep', ...tasks.map((x) => String(x.task.id))])];
        }
        if (kind !== 'delete') writeBoth(file, t);
      }
      resUp = resAd = null;
    } else if (op === 'report') {
      const variant = pick(['valid', 'valid', 'valid', 'valid', 'stale_fingerprint', 'other_member_token', 'expired_token', 'malformed_token', 'missing_token', 'foreign_task', 'with_tasks', 'lease', 'malformed_request']);
      label.variant = variant;
      if (variant === 'expired_token') {
        // let the latest token of each side age past its 15 min TTL first
        nowMs += 16 * MINUTE;
        setNow(nowMs);
        ad?.setClockForTesting(nowMs);
      }
      const stateFor = (lt) => {
        const items = lt?.items ?? [];
        if (items.length === 0) return chance(0.8) ? 'caught_up' : pick(['still_working', 'blocked']);
        return pick(['still_working', 'still_working', 'blocked', 'caught_up']);
      };
      const sideRequest = (side) => {
        const lt = latest(side, m);
        const others = names.filter((n) => n.trim().toLowerCase() !== String(m).trim().toLowerCase());
        const other = others.length ? latest(side, others[0]) : null;
        const req = { teamName: c.teamName, memberName: m, state: label.state, agendaFingerprint: lt?.fp ?? 'agenda:v1:none', source: 'mcp' };
        if (lt?.token) req.reportToken = lt.token;
        if (variant === 'stale_fingerprint') {
          const h = hist[side][String(m).trim().toLowerCase()] ?? [];
          const old = h.find((x) => x.fp !== lt?.fp);
          req.agendaFingerprint = old?.fp ?? `agenda:v1:${'0'.repeat(64)}`;
        } else if (variant === 'other_member_token') {
          if (other?.token) req.reportToken = other.token;
          else delete req.reportToken;
        } else if (variant === 'malformed_token') req.reportToken = pick(['garbage', 'wrs:v1:e30.AAAA', '', 'wrs:v1:' + 'A'.repeat(40)]);
        else if (variant === 'missing_token') delete req.reportToken;
        else if (variant === 'foreign_task') req.taskIds = ['no-such-task'];
        else if (variant === 'with_tasks') req.taskIds = (lt?.items ?? []).slice(0, 2).map((i) => (label.useDisplay && i.displayId ? i.displayId : i.taskId));
        else if (variant === 'lease') req.leaseTtlMs = label.lease;
        else if (variant === 'malformed_request') req.state = 'done';
        if (req.taskIds && req.taskIds.length === 0) delete req.taskIds;
        return req;
      };
      // The reported state (and how many numbers stateFor draws) follows the size of the reference's
      // latest agenda for the member; an addon-only replay takes that size from the recording.
      refItemCount = recorded ? recorded.steps[step].refItemCount : (latest('up', m)?.items ?? []).length;
      label.state = stateFor({ items: new Array(refItemCount) });
      label.useDisplay = chance(0.5);
      label.lease = pick([1000, 30_000, 90_000, 5 * MINUTE, 20 * MINUTE, 2 * 60 * MINUTE, 3.5 * MINUTE]);
      if (chance(0.3)) label.note = 'note';
      // Each side draws its own malformed token, as in the driver: both draws happen in either mode.
      const reqUp = sideRequest('up');
      const reqAd = sideRequest('ad');
      if (label.note) reqUp.note = reqAd.note = label.note;
      if (variant === 'malformed_request') {
        // reference: its HTTP route answers 400 before the feature runs (state not a report state)
        await both(
          async () => ({ http400: 'state must be still_working, blocked, or caught_up' }),
          () => ad.report(reqAd)
        );
        resUp = { outcome: 'rejected_before_feature' };
        if (ad) resAd = resAd?.error ? { outcome: resAd.error === 'MWS_INVALID_ARGUMENT' ? 'rejected_before_feature' : resAd.error } : { outcome: `resolved ${resAd.code}` };
      } else {
        await both(() => up.report(reqUp), () => ad.report(reqAd));
        const proj = (res, side) => {
          if (res?.error) return { error: res.error };
          remember(side, m, res?.status);
          return res ? { accepted: res.accepted, code: res.code, status: projectStatus(res.status) } : null;
        };
        resUp = proj(resUp, 'up');
        resAd = proj(resAd, 'ad');
      }
    } else if (op === 'turnSettled') {
      const n = ++spoolN;
      const nowIso = new Date(nowMs).toISOString();
      const stamp = nowIso.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
      const payload = { provider: 'codex', source: 'agent-teams-orchestrator-codex-native', eventName: 'runtime_turn_settled', hookEventName: 'Stop', sessionId: `sess-${ci}-${n}`, turnId: `turn-${ci}-${n}`, teamName: c.teamName, memberName: m, recordedAt: nowIso };
      const fileName = `${stamp}-1000-beh${n}.codex.json`;
      for (const root of roots) {
        const dir = path.join(root, 'teams', '.member-work-sync', 'runtime-hooks', 'incoming');
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, fileName), JSON.stringify(payload));
      }
      await both(() => up.drainTurnSettled(), () => ad.drainRuntimeTurnSettledEvents());
      const pick5 = (s) => (s && !s.error ? { claimed: s.claimed, enqueued: s.enqueued, unresolved: s.unresolved, ignored: s.ignored, invalid: s.invalid } : s);
      if (up) resUp = resUp?.error ? resUp : { ...pick5(resUp.summary), reconcileErrors: resUp.errors.length };
      if (ad) resAd = resAd?.error ? resAd : { ...pick5(resAd), reconcileErrors: resAd.failed ?? 0 };
    } else if (op === 'dispatch') {
      await both(() => up.dispatchDueNudges([c.teamName]), () => ad.dispatchDueNudges([c.teamName]));
      const p = (s) => (s && !s.error ? { claimed: s.claimed, delivered: s.delivered, superseded: s.superseded, retryable: s.retryable, terminal: s.terminal } : s);
      resUp = p(resUp);
      resAd = p(resAd);
    } else if (op === 'metrics') {
      await both(() => up.getMetrics({ teamName: c.teamName }), () => ad.getMetrics({ teamName: c.teamName }));
      resUp = projectMetrics(plain(resUp));
      resAd = projectMetrics(plain(resAd));
    } else if (op === 'lifecycle') {
      const x = r();
      if (x < 0.3) {
        life.teamActive = false;
        life.activeMembers = null;
        label.lifecycle = 'team inactive';
      } else if (x < 0.65) {
        life.teamActive = true;
        life.activeMembers = members.map((mm) => mm.normalized).filter((nn) => nn !== String(m).trim().toLowerCase());
        label.lifecycle = `member ${m} inactive`;
      } else {
        life.teamActive = true;
        life.activeMembers = null;
        label.lifecycle = 'all active';
      }
      ad?.setTeamRuntimeState(c.teamName, life.activeMembers === null ? { active: life.teamActive } : { active: life.teamActive, activeMembers: life.activeMembers });
      resUp = resAd = null;
    }

    const stepOut = { label, now: new Date(nowMs).toISOString(), result: {}, obs: {} };
    if (op === 'report') stepOut.refItemCount = refItemCount;
    if (up) {
      stepOut.result.up = plain(resUp) ?? null;
      stepOut.obs.up = observe(teamDirA, seenA);
    }
    if (ad) {
      stepOut.result.ad = plain(resAd) ?? null;
      stepOut.obs.ad = observe(teamDirB, seenB);
    }
    out.push(stepOut);
  }
  if (ad) await ad.dispose().catch(() => {});
  return { id: c.id, teamName: c.teamName, members, steps: out };
}
