//go:build race

package main

// raceBuild: the race detector multiplies memory use, so figures of RSS
// mean nothing in this build.
const raceBuild = true
