// Included by the three modules: the data `keys` wrote, and the two exports made from each
// library's key decoding and aggregate verify.

/// The proof-of-possession ciphersuite of the beacon chain.
const DST: &[u8] = b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";
/// The committee's 512 compressed keys.
static PKS: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/data/pks.bin"));
/// Their aggregate signature of `MSG`, compressed.
static SIG: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/data/sig.bin"));
/// The signed root.
static MSG: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/data/msg.bin"));

/// `setup` (the keys decompressed and checked by `$decode`, held as a verifier holds a
/// period's committee) and `verify` (`$verify` over the held keys: 1 when it holds).
macro_rules! exports {
    ($key:ty, $decode:expr, $verify:expr) => {
        /// The keys `setup` took in.
        static KEYS: std::sync::Mutex<Vec<$key>> = std::sync::Mutex::new(Vec::new());

        /// Takes the 512 keys in, once per committee.
        #[unsafe(no_mangle)]
        pub extern "C" fn setup() -> u32 {
            let keys: Vec<$key> = PKS.chunks(48).map($decode).collect();
            *KEYS.lock().unwrap() = keys;
            512
        }

        /// One aggregate verify of every key's signature: 1 when it holds.
        #[unsafe(no_mangle)]
        pub extern "C" fn verify() -> u32 {
            u32::from($verify(&KEYS.lock().unwrap()[..]))
        }
    };
}
