// Drawing of one view (the server's "view" message) on the mat and on the arena grid: the same code for the live
// console and for a replay. Mat units throughout (x right, y down, as SVG), so the mat is drawn to scale.
'use strict';

const ToioDraw = (() => {
  const NS = 'http://www.w3.org/2000/svg';
  const BODY = 0.0318 / (0.560 / 411);         // a cube's 31.8 mm side, mat units
  const MARGIN = 40;                            // mat units shown around the mat (a click there is off the mat)
  const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
    '#bcbd22', '#17becf', '#393b79', '#ad494a', '#637939', '#8c6d31', '#843c39', '#7b4173'];
  const CELL_FILL = { u: '#b0b0b0', f: '#ffffff', o: '#212121' };
  const GRID_PX = 18;

  function el(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function colour(i) { return PALETTE[i % PALETTE.length]; }
  function keyed(parent, key, make) {           // the child made once for `key`, then reused
    let e = parent.querySelector(`[data-key="${key}"]`);
    if (!e) { e = make(); e.setAttribute('data-key', key); parent.appendChild(e); }
    return e;
  }

  // ---------------------------------------------------------------------------------------------- the mat
  function drawMat(svg, nav) {
    const sig = JSON.stringify([nav.mat_rect, nav.border, nav.walls]);
    if (svg.dataset.sig === sig) return;
    svg.dataset.sig = sig;
    const [x0, y0, x1, y1] = nav.mat_rect;
    svg.setAttribute('viewBox', `${x0 - MARGIN} ${y0 - MARGIN} ${x1 - x0 + 2 * MARGIN} ${y1 - y0 + 2 * MARGIN}`);
    const layer = svg.querySelector('#mat-layer');
    layer.replaceChildren();
    el('rect', { x: x0 - MARGIN, y: y0 - MARGIN, width: x1 - x0 + 2 * MARGIN, height: y1 - y0 + 2 * MARGIN,
      fill: '#eceff1' }, layer);
    el('rect', { id: 'mat', x: x0, y: y0, width: x1 - x0, height: y1 - y0, fill: '#fbfaf3', stroke: '#555',
      'stroke-width': 1.2, 'data-rect': nav.mat_rect.join(',') }, layer);
    for (let g = Math.ceil(x0 / 50) * 50; g <= x1; g += 50) {
      el('line', { x1: g, y1: y0, x2: g, y2: y1, stroke: '#e4e2d6', 'stroke-width': 0.6 }, layer);
    }
    for (let g = Math.ceil(y0 / 50) * 50; g <= y1; g += 50) {
      el('line', { x1: x0, y1: g, x2: x1, y2: g, stroke: '#e4e2d6', 'stroke-width': 0.6 }, layer);
    }
    const walls = [];
    for (let i = 0; i + 5 <= nav.walls.length; i += 5) walls.push(nav.walls.slice(i, i + 5));
    if (nav.border.length === 5) {
      const [w, bx1, bx2, by1, by2] = nav.border;
      walls.push([bx1, by1, bx1, by2, w], [bx2, by1, bx2, by2, w], [bx1, by1, bx2, by1, w], [bx1, by2, bx2, by2, w]);
    }
    for (const [ax, ay, bx, by, w] of walls) {
      el('line', { class: 'wall', x1: ax, y1: ay, x2: bx, y2: by, stroke: '#90a4ae', 'stroke-opacity': 0.45,
        'stroke-width': Math.max(1, w), 'stroke-linecap': 'square' }, layer);
      el('line', { x1: ax, y1: ay, x2: bx, y2: by, stroke: '#37474f', 'stroke-width': 1 }, layer);
    }
    const s = 100 / 0.560 * 0.411;              // 100 mm in mat units
    el('line', { x1: x0, y1: y1 + 18, x2: x0 + s, y2: y1 + 18, stroke: '#333', 'stroke-width': 1.5 }, layer);
    const t = el('text', { x: x0, y: y1 + 30, 'font-size': 10, fill: '#333' }, layer);
    t.textContent = '100 mm';
  }

  function drawCubes(svg, view, selected) {
    const layer = svg.querySelector('#cube-layer');
    const goals = svg.querySelector('#goal-layer');
    const seen = new Set();
    view.cubes.forEach((c, i) => {
      seen.add(c.name);
      const g = keyed(layer, c.name, () => {
        const g = el('g', { class: 'cube', 'data-cube': c.name });
        el('rect', { class: 'body', x: -BODY / 2, y: -BODY / 2, width: BODY, height: BODY, rx: 3,
          fill: colour(i), 'fill-opacity': 0.85, stroke: '#222', 'stroke-width': 0.8 }, g);
        el('path', { d: `M ${BODY / 2 - 1} 0 L ${BODY / 2 - 8} -5 L ${BODY / 2 - 8} 5 Z`, fill: '#fff' }, g);
        el('circle', { class: 'ring', r: BODY * 0.85, fill: 'none', stroke: '#f9a825', 'stroke-width': 2.5 }, g);
        const label = el('text', { class: 'label', 'font-size': 9, 'text-anchor': 'middle', fill: '#111' });
        label.textContent = c.name;
        g.label = label;
        layer.appendChild(label);
        return g;
      });
      const known = c.x !== null && c.y !== null;
      g.style.display = known ? '' : 'none';
      g.label.style.display = known ? '' : 'none';
      const goal = goals.querySelector(`[data-key="${c.name}"]`);
      if (goal) goal.style.display = known ? '' : 'none';
      if (!known) return;
      g.setAttribute('transform', `translate(${c.x} ${c.y}) rotate(${(c.theta || 0) * 180 / Math.PI})`);
      g.setAttribute('data-health', c.health);
      g.setAttribute('opacity', c.health === 'ok' ? 1 : c.health === 'lost' ? 0.3 : 0.6);
      g.querySelector('.body').setAttribute('stroke-dasharray', c.health === 'ok' ? '' : '3 2');
      g.querySelector('.ring').style.display = c.name === selected ? '' : 'none';
      g.label.setAttribute('x', c.x);
      g.label.setAttribute('y', c.y - BODY * 0.75);
      g.label.textContent = c.health === 'ok' ? c.name : `${c.name} (${c.health})`;
      drawGoal(goals, c, colour(i));
    });
    for (const g of [...layer.querySelectorAll('g.cube')]) {
      if (!seen.has(g.dataset.cube)) { g.label.remove(); g.remove(); }
    }
  }

  function drawGoal(layer, c, col) {
    const g = keyed(layer, c.name, () => {
      const g = el('g', { class: 'goal', 'data-cube': c.name });
      el('line', { class: 'to-goal', stroke: col, 'stroke-width': 0.8, 'stroke-dasharray': '4 3' }, g);
      el('path', { class: 'goal-mark', d: 'M -5 -5 L 5 5 M -5 5 L 5 -5', stroke: col, 'stroke-width': 2 }, g);
      el('line', { class: 'to-wp', stroke: col, 'stroke-width': 1.2 }, g);
      el('circle', { class: 'wp', r: 3, fill: col }, g);
      return g;
    });
    const goal = c.goal && c.goal[2] !== 'stop' && c.goal[0] !== null ? c.goal : null;
    const wp = c.waypoint;
    const line = g.querySelector('.to-goal'), mark = g.querySelector('.goal-mark');
    line.style.display = mark.style.display = goal ? '' : 'none';
    if (goal) {
      line.setAttribute('x1', c.x); line.setAttribute('y1', c.y);
      line.setAttribute('x2', goal[0]); line.setAttribute('y2', goal[1]);
      mark.setAttribute('transform', `translate(${goal[0]} ${goal[1]})`);
    }
    const wl = g.querySelector('.to-wp'), wc = g.querySelector('.wp');
    wl.style.display = wc.style.display = wp ? '' : 'none';
    if (wp) {
      wl.setAttribute('x1', c.x); wl.setAttribute('y1', c.y); wl.setAttribute('x2', wp[0]); wl.setAttribute('y2', wp[1]);
      wc.setAttribute('cx', wp[0]); wc.setAttribute('cy', wp[1]);
    }
  }

  function drawContacts(svg, contacts) {
    const layer = svg.querySelector('#contact-layer');
    layer.replaceChildren();
    for (const [age, a, b, x, y] of contacts.recent) {
      const f = Math.max(0, 1 - age / 3);
      el('circle', { class: 'contact', cx: x, cy: y, r: 6 + 18 * (1 - f), fill: 'none', stroke: '#d50000',
        'stroke-width': 2.5, opacity: f }, layer);
      const t = el('text', { x: x + 8, y: y - 8, 'font-size': 8, fill: '#d50000', opacity: f }, layer);
      t.textContent = `${a}–${b}`;
    }
  }

  // ---------------------------------------------------------------------------------------------- the arena
  function cellRect(a, cx, cy, m) {            // a cell in mat units (m = [origin x, origin y, cell size])
    return [m[0] + cx * m[2], m[1] + (a.rows - 1 - cy) * m[2], m[2]];
  }

  function drawArenaOnMat(svg, a) {
    const layer = svg.querySelector('#arena-layer');
    if (!a || !a.mapping) { layer.replaceChildren(); return; }
    const sig = a.cells + JSON.stringify([a.mapping, a.robot, a.path, a.waypoint]);
    if (layer.dataset.sig === sig) return;
    layer.dataset.sig = sig;
    layer.replaceChildren();
    for (let cy = 0; cy < a.rows; cy++) {
      for (let cx = 0; cx < a.cols; cx++) {
        const s = a.cells[cy * a.cols + cx] || 'u';
        const [x, y, w] = cellRect(a, cx, cy, a.mapping);
        el('rect', { x, y, width: w, height: w, fill: CELL_FILL[s], 'fill-opacity': s === 'u' ? 0.25 : 0.55,
          stroke: '#9e9e9e', 'stroke-width': 0.3 }, layer);
      }
    }
    if (a.path.length > 1) {
      const pts = a.path.map(([cx, cy]) => { const [x, y, w] = cellRect(a, cx, cy, a.mapping); return `${x + w / 2},${y + w / 2}`; });
      el('polyline', { points: pts.join(' '), fill: 'none', stroke: '#00897b', 'stroke-width': 2.5, opacity: 0.8 }, layer);
    }
  }

  function arenaGrid(svg, a) {
    const w = a.cols * GRID_PX, h = a.rows * GRID_PX;
    if (svg.dataset.size !== `${a.cols}x${a.rows}`) {
      svg.dataset.size = `${a.cols}x${a.rows}`;
      svg.setAttribute('viewBox', `-14 -2 ${w + 16} ${h + 16}`);
      svg.replaceChildren();
      const cells = el('g', { id: 'arena-cells' }, svg);
      for (let cy = 0; cy < a.rows; cy++) {
        for (let cx = 0; cx < a.cols; cx++) {
          el('rect', { class: 'cell', 'data-x': cx, 'data-y': cy, x: cx * GRID_PX, y: (a.rows - 1 - cy) * GRID_PX,
            width: GRID_PX, height: GRID_PX, stroke: '#9e9e9e', 'stroke-width': 0.5 }, cells);
        }
      }
      for (let cx = 0; cx < a.cols; cx += 2) {
        el('text', { x: cx * GRID_PX + GRID_PX / 2, y: h + 11, 'font-size': 8, 'text-anchor': 'middle' }, svg).textContent = cx;
      }
      for (let cy = 0; cy < a.rows; cy += 2) {
        el('text', { x: -3, y: (a.rows - 1 - cy) * GRID_PX + 12, 'font-size': 8, 'text-anchor': 'end' }, svg).textContent = cy;
      }
      el('g', { id: 'arena-marks' }, svg);
    }
    return svg.querySelector('#arena-marks');
  }

  function inZone(cx, cy, centre) { return Math.abs(cx - centre[0]) <= 1 && Math.abs(cy - centre[1]) <= 1; }

  function drawArena(svg, a) {
    const marks = arenaGrid(svg, a);
    for (const r of svg.querySelectorAll('#arena-cells rect')) {
      const cx = +r.dataset.x, cy = +r.dataset.y;
      const s = a.cells[cy * a.cols + cx] || 'u';
      let fill = CELL_FILL[s];
      if (s !== 'o' && inZone(cx, cy, a.start)) fill = '#a5d6a7';
      if (s !== 'o' && inZone(cx, cy, a.goal)) fill = '#90caf9';
      if (a.waypoint && cx === a.waypoint[0] && cy === a.waypoint[1]) fill = '#fff176';
      r.setAttribute('fill', fill);
      r.setAttribute('data-state', s);
    }
    marks.replaceChildren();
    const centre = (cx, cy) => [cx * GRID_PX + GRID_PX / 2, (a.rows - 1 - cy) * GRID_PX + GRID_PX / 2];
    if (a.path.length > 1) {
      el('polyline', { id: 'fp-path', points: a.path.map(([cx, cy]) => centre(cx, cy).join(',')).join(' '),
        fill: 'none', stroke: '#00897b', 'stroke-width': 3, 'stroke-linejoin': 'round', opacity: 0.85,
        'data-cells': a.path.length }, marks);
    }
    for (const [id, cx, cy, face] of a.images) {
      const [x, y] = centre(cx, cy);
      el('text', { x, y: y + 4, 'font-size': 10, 'text-anchor': 'middle', fill: '#ffeb3b', 'font-weight': 'bold' },
        marks).textContent = `${id}${face}`;
    }
    if (a.robot) {
      const [cx, cy, heading] = a.robot;
      const [x, y] = centre(cx, cy);
      const d = { N: [0, -1], E: [1, 0], S: [0, 1], W: [-1, 0] }[heading] || [0, -1];
      el('circle', { id: 'arena-robot-mark', cx: x, cy: y, r: GRID_PX * 1.4, fill: '#ef6c00', 'fill-opacity': 0.55,
        stroke: '#e65100', 'stroke-width': 1.5 }, marks);
      el('line', { x1: x, y1: y, x2: x + d[0] * GRID_PX * 1.3, y2: y + d[1] * GRID_PX * 1.3, stroke: '#3e2723',
        'stroke-width': 3 }, marks);
    }
  }

  function cellAt(svg, evt, a) {               // the arena cell under a click on the grid, or null
    const p = svgPoint(svg, evt);
    const cx = Math.floor(p.x / GRID_PX), cy = a.rows - 1 - Math.floor(p.y / GRID_PX);
    return cx >= 0 && cx < a.cols && cy >= 0 && cy < a.rows ? [cx, cy] : null;
  }

  function svgPoint(svg, evt) {                // a mouse event's point in the SVG's own units
    const p = svg.createSVGPoint();
    p.x = evt.clientX; p.y = evt.clientY;
    return p.matrixTransform(svg.getScreenCTM().inverse());
  }

  function drawRefused(svg, refused) {         // where a refused goal was clicked, for a few seconds
    const layer = svg.querySelector('#contact-layer');
    if (!refused || performance.now() - refused.at > 4000) return;
    el('path', { id: 'refused-mark', d: `M ${refused.x - 6} ${refused.y - 6} L ${refused.x + 6} ${refused.y + 6} ` +
      `M ${refused.x - 6} ${refused.y + 6} L ${refused.x + 6} ${refused.y - 6}`, stroke: '#c62828',
    'stroke-width': 2.5 }, layer);
    el('text', { x: refused.x + 8, y: refused.y + 3, 'font-size': 9, fill: '#c62828' }, layer).textContent = 'refused';
  }

  function view(matSvg, arenaSvg, v, selected, refused) {
    drawMat(matSvg, v.navigator);
    drawArenaOnMat(matSvg, v.arena);
    drawCubes(matSvg, v, selected);
    drawContacts(matSvg, v.contacts);
    drawRefused(matSvg, refused);
    if (v.arena) drawArena(arenaSvg, v.arena);
  }

  return { view, svgPoint, cellAt, colour, BODY };
})();
