package gen

// Version is normgen's version, written into every generated header and
// printed by normgen --version.
const Version = "0.1.0"
