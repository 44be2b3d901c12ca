// The molecule viewer: 3Dmol.js, loaded on first use (the records list and the
// plots never pay for it). Atoms as spheres coloured by element; the cell as
// its twelve edges when the frame carries a defined one.
let library = null;

async function load() {
  library ??= import("/static/vendor/3dmol/3Dmol.es6-min.js");
  return library;
}

const SYMBOLS = ("X H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu " +
  "Zn Ga Ge As Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe").split(" ");

/** Element symbols of an atoms block: its `element` column, else `atomic_number`, else null. */
export function elementsOf(columns) {
  if (!columns) return null;
  // MRF1 columns are arrays; JSON columns are {dtype, shape, values}
  const values = (column) => (column && !ArrayBuffer.isView(column) && !Array.isArray(column) ? column.values : column);
  const element = values(columns.element);
  if (Array.isArray(element)) return element;
  const z = values(columns.atomic_number);
  if (z) return Array.from(z, (n) => SYMBOLS[Number(n)] ?? "X");
  return null;
}

export class MoleculeView {
  static async create(element) {
    const $3Dmol = await load();
    // no multisampling: it multiplies the cost of every draw (3-5x in software GL), the spheres
    // stay legible without it
    const viewer = $3Dmol.createViewer(element, { backgroundColor: "white", antialias: false });
    return new MoleculeView(viewer, element);
  }

  constructor(viewer, element) {
    this.viewer = viewer;
    this.element = element;
    this.framed = false;
  }

  /** Draw atoms (x, y, z typed arrays; elements or null) and the box (or undefined). */
  show({ x, y, z, elements }, box) {
    const v = this.viewer;
    v.removeAllModels();
    v.removeAllShapes();
    const atoms = new Array(x.length);
    for (let i = 0; i < x.length; i += 1) {
      atoms[i] = { elem: elements?.[i] ?? "C", x: x[i], y: y[i], z: z[i], serial: i, bonds: [] };
    }
    const model = v.addModel();
    model.addAtoms(atoms);
    model.setStyle({}, { sphere: { scale: 0.3 } });
    // frames come resolved (carry-forward applied): a frame's box is its cell
    const edges = box?.cell_defined ? this.cell(box) : 0;
    this.element.dataset.cellEdges = String(edges);
    if (!this.framed) {
      v.zoomTo();
      v.rotate(-20, "x");
      v.rotate(30, "y");
      this.framed = true;
    }
    v.render();
  }

  cell(box) {
    // vectors' columns are the lattice vectors (spec frame.md)
    const m = box.vectors;
    const o = box.origin ?? [0, 0, 0];
    const vec = (j) => [Number(m[0][j]), Number(m[1][j]), Number(m[2][j])];
    const [a, b, c] = [vec(0), vec(1), vec(2)];
    const at = (i, j, k) => ({
      x: o[0] + i * a[0] + j * b[0] + k * c[0],
      y: o[1] + i * a[1] + j * b[1] + k * c[1],
      z: o[2] + i * a[2] + j * b[2] + k * c[2],
    });
    const edges = [];
    for (const [i, j] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
      edges.push([at(0, i, j), at(1, i, j)], [at(i, 0, j), at(i, 1, j)], [at(i, j, 0), at(i, j, 1)]);
    }
    for (const [start, end] of edges) {
      this.viewer.addLine({ start, end, color: "#555555", dashed: false });
    }
    return edges.length;
  }

  destroy() {
    this.viewer.clear();
  }
}
