// The interactive design-space page of traincost.plots.design_space, with no library: a canvas panel per step,
// hover a point for its whole row, click two points for their difference, filter by a swept parameter, switch views.
// window.designSpace.ready resolves once drawn; designSpace.points() gives each drawn point's position in the window
// (bench/report_screenshot.py hovers and clicks them).
(async function () {
  "use strict";
  const packed = Uint8Array.from(atob(document.getElementById("design-space").textContent), (c) => c.charCodeAt(0));
  const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"));
  const page = await new Response(stream).json();
  const count = page.values.config_id.length;
  const rows = Array.from({length: count}, (_, i) => Object.fromEntries(page.columns.map((c) => [c, page.values[c][i]])));
  const filters = Object.fromEntries(page.parameters.map((p) => [p, null]));
  const tooltip = document.getElementById("tooltip");
  const WIDTH = 470, HEIGHT = 380, MARGIN = {left: 64, right: 12, top: 24, bottom: 42}, RADIUS = 2.5, NEAR = 6;
  const CATEGORIES = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"];
  const VIRIDIS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"];
  let view = page.views[0];
  let panels = [];
  let picked = [];

  function format(value) {
    if (value === null || value === undefined) return "–";
    if (typeof value !== "number") return String(value);
    if (Number.isInteger(value) && Math.abs(value) < 1e7) return value.toLocaleString("en-US");
    if (Math.abs(value) >= 1e7 || (value !== 0 && Math.abs(value) < 1e-3)) return value.toExponential(3);
    return String(Number(value.toPrecision(4)));
  }
  // a tick label: 2e5, 5.8e8, 0.25, 1,024
  function short(value) {
    const v = Number(value.toPrecision(12));
    if (v === 0 || (Math.abs(v) < 1e5 && Math.abs(v) >= 1e-2)) return format(Number(v.toPrecision(3)));
    const e = Math.floor(Math.log10(Math.abs(v)));
    return `${Number((v / 10 ** e).toPrecision(3))}e${e}`;
  }
  const key = (row) => `${row.config_id} (${row.step})`;
  const shown = () => rows.filter((row) => page.parameters.every((p) => filters[p] === null || row[p] === filters[p]));

  function table(head, lines) {
    const cells = (tag, values) => values.map((value) => `<${tag}>${value}</${tag}>`).join("");
    return `<table><thead><tr>${cells("th", head)}</tr></thead><tbody>` +
      lines.map((line) => `<tr>${cells("td", line)}</tr>`).join("") + "</tbody></table>";
  }

  // a scale from data values to pixels, linear or logarithmic, with the ticks to label
  function scale(values, axis, from, to, padded = true) {
    const usable = values.filter((v) => typeof v === "number" && (!axis.log || v > 0));
    const f = axis.log ? Math.log10 : (v) => v;
    let low = Math.min(...usable.map(f)), high = Math.max(...usable.map(f));
    if (!isFinite(low)) [low, high] = [0, 1];
    if (low === high) [low, high] = [low - 0.5, high + 0.5];
    const pad = padded ? (high - low) * 0.04 : 0;
    [low, high] = [low - pad, high + pad];
    const position = (v) => from + ((f(v) - low) / (high - low)) * (to - from);
    const ticks = axis.log ? logTicks(low, high) : linearTicks(low, high);
    return {position, ticks, low, high, f};
  }

  function linearTicks(low, high) {
    const raw = (high - low) / 5, power = 10 ** Math.floor(Math.log10(raw));
    const step = power * [1, 2, 5, 10].find((m) => power * m >= raw);
    const ticks = [];
    for (let v = Math.ceil(low / step) * step; v <= high; v += step) ticks.push([v, short(v)]);
    return ticks;
  }

  // powers of ten, or 1-2-5 (every digit) within them when the axis spans less than two (one third of a) decade
  function logTicks(low, high) {
    const span = high - low;
    const digits = span >= 2 ? [1] : span >= 0.7 ? [1, 2, 5] : [1, 2, 3, 4, 5, 6, 7, 8, 9];
    const ticks = [];
    for (let e = Math.floor(low); e <= Math.ceil(high); e++) {
      for (const d of digits) {
        const v = d * 10 ** e;
        if (Math.log10(v) >= low && Math.log10(v) <= high) ticks.push([v, d === 1 ? `1e${e}` : `${d}e${e}`]);
      }
    }
    if (ticks.length > 8) return ticks.filter((_, i) => i % Math.ceil(ticks.length / 8) === 0);
    if (ticks.length < 2) return linearTicks(10 ** low, 10 ** high);  // less than a digit apart: evenly spaced values
    return ticks;
  }

  function color(t) {
    const x = Math.max(0, Math.min(1, t)) * (VIRIDIS.length - 1), i = Math.min(Math.floor(x), VIRIDIS.length - 2);
    const [a, b] = [VIRIDIS[i], VIRIDIS[i + 1]].map((h) => [1, 3, 5].map((k) => parseInt(h.slice(k, k + 2), 16)));
    return `rgb(${a.map((v, k) => Math.round(v + (b[k] - v) * (x - i))).join(",")})`;
  }

  // the colour of a value of the view's colour column: a category's own, or viridis along its range
  function coloring() {
    const values = rows.map((row) => row[view.color.column]);
    if (view.color.categorical) {
      const names = [...new Set(values)].sort();
      return {names, of: (v) => (v === null ? "#999" : CATEGORIES[names.indexOf(v) % CATEGORIES.length])};
    }
    const s = scale(values, view.color, 0, 1, false);
    return {...s, of: (v) => (v === null ? "#999" : color((s.f(v) - s.low) / (s.high - s.low)))};
  }

  function draw() {
    const container = document.getElementById("panels");
    container.replaceChildren();
    const all = shown();
    const colors = coloring();
    panels = page.steps.map((step) => {
      const points = all.filter((row) => row.step === step && row[view.x.column] !== null && row[view.y.column] !== null);
      const canvas = document.createElement("canvas");
      const ratio = window.devicePixelRatio || 1;
      Object.assign(canvas, {width: WIDTH * ratio, height: HEIGHT * ratio, title: ""});
      Object.assign(canvas.style, {width: `${WIDTH}px`, height: `${HEIGHT}px`});
      canvas.dataset.step = step;
      container.appendChild(canvas);
      const x = scale(points.map((row) => row[view.x.column]), view.x, MARGIN.left, WIDTH - MARGIN.right);
      const y = scale(points.map((row) => row[view.y.column]), view.y, HEIGHT - MARGIN.bottom, MARGIN.top);
      const placed = points.map((row) => ({row, px: x.position(row[view.x.column]), py: y.position(row[view.y.column])}));
      const panel = {step, canvas, placed, x, y};
      paint(panel, colors, ratio);
      canvas.addEventListener("pointermove", (event) => hover(panel, event));
      canvas.addEventListener("pointerleave", () => { tooltip.hidden = true; });
      canvas.addEventListener("click", (event) => pick(panel, event));
      return panel;
    });
    const legend = document.getElementById("legend");
    legend.querySelector(".label").textContent = view.color.label;
    if (view.color.categorical) {
      legend.querySelector(".bar").style.background = "none";
      legend.querySelector(".low").innerHTML = colors.names.map((n) => `<b style="color:${colors.of(n)}">●</b> ${n}`).join(" ");
      legend.querySelector(".high").textContent = "";
    } else {
      legend.querySelector(".bar").style.background = `linear-gradient(to right, ${VIRIDIS.join(",")})`;
      const ends = [colors.low, colors.high].map((v) => format(Number((view.color.log ? 10 ** v : v).toPrecision(6))));
      legend.querySelector(".low").textContent = ends[0];
      legend.querySelector(".high").textContent = `${ends[1]}${view.color.log ? " (log)" : ""}`;
    }
    document.getElementById("about").textContent = `${page.about ? `${page.about}: ` : ""}${all.length} of ${rows.length} points shown.`;
  }

  function paint(panel, colors, ratio) {
    const {canvas, placed, x, y, step} = panel;
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, WIDTH, HEIGHT);
    g.font = "11px system-ui, sans-serif";
    g.strokeStyle = "#e4e4e4";
    g.fillStyle = "#333";
    g.textAlign = "center";
    for (const [v, text] of x.ticks) {
      const px = x.position(v);
      g.beginPath(); g.moveTo(px, MARGIN.top); g.lineTo(px, HEIGHT - MARGIN.bottom); g.stroke();
      g.fillText(text, px, HEIGHT - MARGIN.bottom + 14);
    }
    g.textAlign = "right";
    for (const [v, text] of y.ticks) {
      const py = y.position(v);
      g.beginPath(); g.moveTo(MARGIN.left, py); g.lineTo(WIDTH - MARGIN.right, py); g.stroke();
      g.fillText(text, MARGIN.left - 4, py + 4);
    }
    g.textAlign = "center";
    g.fillText(view.x.label, (MARGIN.left + WIDTH - MARGIN.right) / 2, HEIGHT - 8);
    g.font = "bold 12px system-ui, sans-serif";
    g.fillText(`${step} (${placed.length} points)`, (MARGIN.left + WIDTH - MARGIN.right) / 2, 14);
    g.save();
    g.translate(12, (MARGIN.top + HEIGHT - MARGIN.bottom) / 2);
    g.rotate(-Math.PI / 2);
    g.font = "11px system-ui, sans-serif";
    g.fillText(view.y.label, 0, 0);
    g.restore();
    g.globalAlpha = 0.75;
    for (const {row, px, py} of placed) {
      const value = row[view.color.column];
      g.fillStyle = colors.of(value);
      g.beginPath(); g.arc(px, py, RADIUS, 0, 2 * Math.PI); g.fill();
    }
    g.globalAlpha = 1;
    g.strokeStyle = "#d62728";
    g.lineWidth = 2;
    const ids = picked.map((row) => row.config_id);
    for (const {row, px, py} of placed) {
      if (ids.includes(row.config_id)) { g.beginPath(); g.arc(px, py, RADIUS + 3, 0, 2 * Math.PI); g.stroke(); }
    }
    g.lineWidth = 1;
  }

  function nearest(panel, event) {
    const rect = panel.canvas.getBoundingClientRect();
    const [mx, my] = [event.clientX - rect.left, event.clientY - rect.top];
    let best = null, distance = NEAR * NEAR;
    for (const point of panel.placed) {
      const d = (point.px - mx) ** 2 + (point.py - my) ** 2;
      if (d <= distance) [best, distance] = [point, d];
    }
    return best && best.row;
  }

  // the tooltip: every column of the point, its configuration first
  function hover(panel, event) {
    const row = nearest(panel, event);
    if (!row) { tooltip.hidden = true; return; }
    tooltip.innerHTML = table(["", key(row)], page.columns.map((c) => [c, format(row[c])]));
    tooltip.hidden = false;
    tooltip.style.left = `${Math.max(0, Math.min(event.clientX + 14, window.innerWidth - tooltip.offsetWidth - 4))}px`;
    tooltip.style.top = `${Math.max(0, Math.min(event.clientY - 20, window.innerHeight - tooltip.offsetHeight - 4))}px`;
  }

  // two points picked: each value side by side with their difference and ratio
  function pick(panel, event) {
    const row = nearest(panel, event);
    if (!row) return;
    picked = [...picked.filter((other) => key(other) !== key(row)), row].slice(-2);
    const colors = coloring();
    panels.forEach((p) => paint(p, colors, window.devicePixelRatio || 1));
    const out = document.getElementById("difference");
    if (picked.length < 2) { out.innerHTML = `<p>Picked A = ${key(row)}: click a second point.</p>`; return; }
    const [a, b] = picked;
    const lines = page.columns.map((c) => {
      const [u, v] = [a[c], b[c]];
      const numbers = typeof u === "number" && typeof v === "number";
      return [c, format(u), format(v), numbers ? format(v - u) : (u === v ? "" : "differs"), numbers && u !== 0 ? format(v / u) : ""];
    });
    out.innerHTML = "<h2>B against A</h2>" + table(["", `A: ${key(a)}`, `B: ${key(b)}`, "B − A", "B / A"], lines);
  }

  function menu(name, options, onChange) {
    const label = document.createElement("label");
    label.textContent = `${name} `;
    const input = document.createElement("select");
    input.name = name;
    options.forEach(([text, value]) => input.add(new Option(text, JSON.stringify(value))));
    input.addEventListener("change", () => onChange(JSON.parse(input.value)));
    label.appendChild(input);
    document.getElementById("controls").appendChild(label);
  }

  if (page.views.length > 1) menu("view", page.views.map((v, i) => [v.name, i]), (i) => { view = page.views[i]; draw(); });
  for (const parameter of page.parameters) {
    const values = [...new Set(rows.map((row) => row[parameter]))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    menu(parameter, [["all", null], ...values.map((v) => [format(v), v])], (value) => { filters[parameter] = value; draw(); });
  }
  const legend = document.createElement("span");
  legend.id = "legend";
  legend.innerHTML = '<span class="label"></span> <span class="low"></span><span class="bar"></span><span class="high"></span>';
  document.getElementById("controls").appendChild(legend);
  draw();
  window.designSpace = {
    page,
    view: () => view,
    points: () => panels.flatMap((panel) => {
      const rect = panel.canvas.getBoundingClientRect();
      return panel.placed.map(({row, px, py}) => ({config_id: row.config_id, step: row.step, x: rect.left + px, y: rect.top + py}));
    }),
  };
  window.designSpace.ready = Promise.resolve(window.designSpace);
  document.body.dataset.ready = "true";
})();
