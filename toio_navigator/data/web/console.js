// The console page: one WebSocket to the server, views drawn as they come (draw.js), commands sent from clicks
// and buttons, each answered by the server with the receiving node's own reason. Live and replay alike; a replay
// hides the commands and shows a time slider.
'use strict';

const state = { ws: null, hello: null, view: null, selected: null, replies: [], nextId: 1, drawn: false,
  pending: {}, sliding: false, views: 0, refused: null };
window.toioConsole = state;                     // for tests and the curious: the last view, the replies
const $ = (id) => document.getElementById(id);

function send(command) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) { note(false, 'not connected'); return; }
  command.id = state.nextId++;
  state.pending[command.id] = command;
  state.ws.send(JSON.stringify(command));
}
state.send = send;

function note(ok, text) {
  const n = $('note');
  n.textContent = text;
  n.className = 'note ' + (ok ? 'ok' : 'refused');
}

function connect() {
  const ws = new WebSocket(`ws://${location.host}/ws`);
  state.ws = ws;
  ws.onopen = () => { $('link').textContent = 'connected'; $('link').className = 'badge on'; };
  ws.onclose = () => {
    $('link').textContent = 'disconnected'; $('link').className = 'badge off';
    setTimeout(connect, 1000);
  };
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.type === 'hello') hello(m);
    else if (m.type === 'view') { state.view = m; state.views += 1; if (!state.drawn) { state.drawn = true; requestAnimationFrame(render); } }
    else if (m.type === 'reply') reply(m);
  };
}

function hello(m) {
  state.hello = m;
  $('kind').textContent = m.kind === 'replay' ? `replay: ${m.source}` : 'live';
  document.body.classList.toggle('replay', m.kind === 'replay');
  $('replay-bar').hidden = m.kind !== 'replay';
  if (m.kind === 'replay') { $('slider').max = m.duration; }
}

function reply(m) {
  const command = state.pending[m.id] || {};
  delete state.pending[m.id];
  state.replies.push({ command, ok: m.ok, text: m.text });
  if (command.op === 'goal' && !m.ok) state.refused = { x: command.x, y: command.y, at: performance.now() };
  if (command.op !== 'seek' && command.op !== 'speed' || !m.ok) note(m.ok, m.text);
}

// ---------------------------------------------------------------------------------------------- drawing
function render() {
  state.drawn = false;
  const v = state.view;
  if (!v) return;
  ToioDraw.view($('mat-view'), $('arena-view'), v, state.selected, state.refused);
  table(v);
  header(v.navigator, v.contacts);
  arenaPanel(v.arena);
  if (state.hello && state.hello.kind === 'replay') replayBar(v);
}

function fmt(v, digits, unit) { return v === null || v === undefined ? '–' : `${v.toFixed(digits)}${unit}`; }

function table(v) {
  const body = $('cubes').querySelector('tbody');
  v.cubes.forEach((c, i) => {
    let row = body.querySelector(`tr[data-cube="${c.name}"]`);
    if (!row) {
      row = document.createElement('tr');
      row.dataset.cube = c.name;
      row.innerHTML = '<td class="swatch"><span></span></td><td class="name"></td><td class="link"></td>' +
        '<td class="battery"></td><td class="status"></td><td class="distance"></td><td class="eta"></td>';
      row.querySelector('.swatch span').style.background = ToioDraw.colour(i);
      row.onclick = () => select(c.name);
      body.appendChild(row);
    }
    row.classList.toggle('selected', c.name === state.selected);
    const name = row.querySelector('.name');
    name.textContent = c.health === 'ok' ? c.name : `${c.name} · ${c.health}`;
    name.className = 'name h-' + c.health.split(' ')[0];
    row.querySelector('.link').textContent = c.link || '–';
    row.querySelector('.link').title = c.link_detail || '';
    row.querySelector('.battery').textContent = c.battery === null ? '–' : `${c.battery}%`;
    row.querySelector('.status').textContent = c.status + (c.collision && c.status === 'moving' ? ' · in a margin' : '');
    row.querySelector('.distance').textContent = fmt(c.distance_mm, 0, ' mm');
    row.querySelector('.eta').textContent = fmt(c.eta_s, 1, ' s');
  });
}

function header(nav, contacts) {
  for (const [id, options, value] of [['planner', nav.planners, nav.planner], ['mode', nav.modes, nav.mode]]) {
    const s = $(id);
    if (s.options.length !== options.length) {
      s.replaceChildren(...options.map((o) => new Option(o, o)));
    }
    if (document.activeElement !== s && value && s.value !== value) s.value = value;
    s.disabled = !nav.online;
  }
  $('contacts').textContent = `contacts ${contacts.count}`;
  $('contacts').className = 'badge' + (contacts.recent.length ? ' off' : '');
}

function arenaPanel(a) {
  $('arena-panel').hidden = !a;
  if (!a) return;
  $('arena-status').textContent = a.status || 'no state yet';
  $('mdf1').textContent = a.mdf[0];
  $('mdf2').textContent = a.mdf[1];
  $('arena-robot').textContent = a.robot ? `(${a.robot[0]}, ${a.robot[1]}) facing ${a.robot[2]}` : '–';
  $('arena-explored').textContent = `${a.explored} of ${a.cols * a.rows} cells, ${a.moves} moves`;
  $('arena-waypoint').textContent = a.waypoint ? `(${a.waypoint[0]}, ${a.waypoint[1]})` : 'none';
  $('fp-summary').textContent = a.path.length > 1
    ? `${a.path.length} poses from (${a.path[0][0]}, ${a.path[0][1]}) to ` +
      `(${a.path[a.path.length - 1][0]}, ${a.path[a.path.length - 1][1]})` : 'none yet';
  $('arena-images').textContent = a.images.length
    ? a.images.map(([id, x, y, face]) => `#${id} at (${x}, ${y}) ${face}`).join(', ') : 'none';
  $('arena-text').textContent = a.text;
}

function replayBar(v) {
  if (!state.sliding) $('slider').value = v.t;
  $('clock').textContent = `${v.t.toFixed(1)} / ${state.hello.duration.toFixed(1)} s`;
  $('play').textContent = v.playing ? 'pause' : 'play';
}

// ---------------------------------------------------------------------------------------------- input
function select(name) {
  state.selected = state.selected === name ? null : name;
  if (state.view) render();
}

function onMatClick(evt) {
  const v = state.view;
  if (!v) return;
  const p = ToioDraw.svgPoint($('mat-view'), evt);
  const hit = v.cubes.find((c) => c.x !== null && Math.hypot(c.x - p.x, c.y - p.y) < ToioDraw.BODY * 0.75);
  if (hit) { select(hit.name); return; }
  if (state.hello && state.hello.kind === 'replay') return;
  if (!state.selected) { note(false, 'select a cube first (click it, or its row)'); return; }
  send({ op: 'goal', cube: state.selected, x: Math.round(p.x * 10) / 10, y: Math.round(p.y * 10) / 10 });
}

function wire() {
  $('mat-view').addEventListener('click', onMatClick);
  $('stop-all').onclick = () => send({ op: 'stop_all' });
  $('planner').onchange = (e) => send({ op: 'set_parameter', name: 'planner', value: e.target.value });
  $('mode').onchange = (e) => send({ op: 'set_parameter', name: 'mode', value: e.target.value });
  $('explore').onclick = () => send({ op: 'explorer', action: 'start_exploration' });
  $('fastest').onclick = () => send({ op: 'explorer', action: 'start_fastest_path' });
  $('terminate').onclick = () => send({ op: 'explorer', action: 'terminate' });
  $('wp-set').onclick = () => send({ op: 'waypoint', x: parseInt($('wp-x').value, 10), y: parseInt($('wp-y').value, 10) });
  $('arena-view').addEventListener('click', (evt) => {
    if (!$('wp-pick').checked || !state.view || !state.view.arena) return;
    const cell = ToioDraw.cellAt($('arena-view'), evt, state.view.arena);
    if (!cell) return;
    [$('wp-x').value, $('wp-y').value] = cell;
    send({ op: 'waypoint', x: cell[0], y: cell[1] });
  });
  $('play').onclick = () => send({ op: state.view && state.view.playing ? 'pause' : 'play' });
  $('slider').addEventListener('input', () => { state.sliding = true; send({ op: 'seek', t: +$('slider').value }); });
  $('slider').addEventListener('change', () => { state.sliding = false; });
  $('speed').onchange = () => send({ op: 'speed', value: +$('speed').value });
}

wire();
connect();
