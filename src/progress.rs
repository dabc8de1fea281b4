//! Progress bars.
