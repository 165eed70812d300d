// Package digest posts health digests of Concourse targets: the figures a
// Source collects (Data), their rendering as a chat message (Render,
// Suggestions: plain functions of the data, the previous digest and now),
// and a cron Scheduler that posts them at most once per fire time.
//
// It shares only the chat port (chatmodel.Chat, chatmodel.Message) with the engine.
// See DIGESTS.md.
package digest
