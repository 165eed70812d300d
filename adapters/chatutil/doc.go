// Package chatutil holds what every chat adapter needs the same way: the
// table of reactions and the intents they mean (the engine knows intents,
// never emoji), and splitting and truncating long messages to a platform's
// limit. It imports only the engine's port types; adapters never import
// each other, so what they share lives here.
package chatutil
