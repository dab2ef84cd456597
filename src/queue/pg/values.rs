//! The neutral model's typed values read from PostgreSQL: each parsed once, where it is read,
//! so that a stored value that is not valid fails its row's read instead of travelling on.

use std::error::Error as StdError;

use postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

use crate::queue::ids::TaskId;
use crate::queue::model::{Attempt, Outcome, Sha};
use crate::queue::phase::Point;

type Boxed = Box<dyn StdError + Sync + Send>;

impl<'a> FromSql<'a> for Outcome {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Boxed> {
        Ok(<&str>::from_sql(ty, raw)?.parse()?)
    }

    fn accepts(ty: &Type) -> bool {
        <&str as FromSql>::accepts(ty)
    }
}

impl<'a> FromSql<'a> for Sha {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Boxed> {
        Ok(Sha::new(<&str>::from_sql(ty, raw)?)?)
    }

    fn accepts(ty: &Type) -> bool {
        <&str as FromSql>::accepts(ty)
    }
}

impl<'a> FromSql<'a> for Attempt {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Boxed> {
        Ok(Attempt::new(i64::from_sql(ty, raw)?)?)
    }

    fn accepts(ty: &Type) -> bool {
        <i64 as FromSql>::accepts(ty)
    }
}

impl<'a> FromSql<'a> for TaskId {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Boxed> {
        Ok(<&str>::from_sql(ty, raw)?.parse()?)
    }

    fn accepts(ty: &Type) -> bool {
        <&str as FromSql>::accepts(ty)
    }
}

impl<'a> FromSql<'a> for Point {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Boxed> {
        Ok(<&str>::from_sql(ty, raw)?.parse()?)
    }

    fn accepts(ty: &Type) -> bool {
        <&str as FromSql>::accepts(ty)
    }
}

impl ToSql for TaskId {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Boxed> {
        self.as_str().to_sql(ty, out)
    }

    fn accepts(ty: &Type) -> bool {
        <&str as ToSql>::accepts(ty)
    }

    to_sql_checked!();
}

impl ToSql for Point {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Boxed> {
        self.as_str().to_sql(ty, out)
    }

    fn accepts(ty: &Type) -> bool {
        <&str as ToSql>::accepts(ty)
    }

    to_sql_checked!();
}

impl ToSql for Outcome {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Boxed> {
        self.as_str().to_sql(ty, out)
    }

    fn accepts(ty: &Type) -> bool {
        <&str as ToSql>::accepts(ty)
    }

    to_sql_checked!();
}
